package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

func (a *app) lookupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "lookup DATABASE.TABLE KEY=VALUE...",
		Short: "Look a row of a primary-key table up by its key",
		Long: `Look a row up by its primary key: one KEY=VALUE per primary-key column, values in the
forms 'strom produce' reads (see 'strom produce --help'). Exits with 3 when there is no such
row.

In the table, NULL is a NULL; a string that could be mistaken for another value ("NULL", "",
leading or trailing spaces) or holds line breaks, tabs or control characters is printed as a
JSON string ("two\nlines"), so each value stays on its line.`,
		Example: `  strom lookup shop.orders id=42
  strom lookup shop.visits day=2026-01-02 user=alice --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("lookup needs DATABASE.TABLE and KEY=VALUE for each primary-key column")
			}
			return nil
		},
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, path, table, err := a.openTable(ctx, args[0])
			if err != nil {
				return err
			}
			info := table.Info()
			if !info.HasPrimaryKey() {
				return fmt.Errorf("%s is a log table: it has no key to look up (read it with 'strom tail %s --from earliest')", path, path)
			}
			schema := info.Schema()
			given := map[string]string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return usagef("%q: want KEY=VALUE", kv)
				}
				given[k] = v
			}
			pk := info.PrimaryKeys()
			key := make(fluss.Row, len(pk))
			for i, name := range pk {
				text, ok := given[name]
				if !ok {
					return usagef("missing %s=VALUE: the primary key of %s is (%s)", name, path, strings.Join(pk, ", "))
				}
				delete(given, name)
				col := schema.Columns[schema.ColumnIndex(name)]
				if key[i], err = parseText(col.Type, text); err != nil {
					return usageError{&badValue{column: name, typ: col.Type, text: text, err: err}}
				}
			}
			for k := range given {
				return usagef("%s is not a primary-key column of %s (primary key: %s)", k, path, strings.Join(pk, ", "))
			}
			lk, err := table.NewLookup().CreateLookuper()
			if err != nil {
				return err
			}
			row, err := lk.Lookup(ctx, key)
			if err != nil {
				return err
			}
			if row == nil {
				if a.json {
					fmt.Fprintln(a.io.Out, "null")
				}
				return notFoundError{fmt.Errorf("no row in %s with %s", path, strings.Join(args[1:], " "))}
			}
			obj := rowJSON(schema.Columns, row)
			if a.json {
				return printJSON(a.io.Out, obj)
			}
			rows := make([][]string, len(obj.keys))
			for i, k := range obj.keys {
				rows[i] = []string{k, cellText(obj.vals[i])}
			}
			return printTable(a.io.Out, []string{"COLUMN", "VALUE"}, rows)
		},
	}
}
