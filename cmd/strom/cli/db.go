package cli

import (
	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

func (a *app) dbCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "db",
		Short: "List, create and drop databases",
		Example: `  strom db ls
  strom db create shop --comment "web shop"
  strom db drop shop --cascade`,
	}
	cmd.AddCommand(a.dbLs(), a.dbCreate(), a.dbDrop())
	return group(cmd)
}

func (a *app) dbLs() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List databases with their number of tables",
		Example: `  strom db ls
  strom db ls --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			admin := conn.Admin()
			names, err := admin.ListDatabases(ctx)
			if err != nil {
				return err
			}
			sortStrings(names)
			type dbJSON struct {
				Name    string `json:"name"`
				Tables  int    `json:"tables"`
				Comment string `json:"comment,omitempty"`
			}
			var out []dbJSON
			for _, n := range names {
				tables, err := admin.ListTables(ctx, n)
				if err != nil {
					return err
				}
				info, err := admin.GetDatabaseInfo(ctx, n)
				if err != nil {
					return err
				}
				out = append(out, dbJSON{Name: n, Tables: len(tables), Comment: info.Descriptor.Comment})
			}
			if a.json {
				if out == nil {
					out = []dbJSON{}
				}
				return printJSON(a.io.Out, out)
			}
			rows := make([][]string, len(out))
			for i, d := range out {
				rows[i] = []string{d.Name, itoa(d.Tables), d.Comment}
			}
			return printTable(a.io.Out, []string{"DATABASE", "TABLES", "COMMENT"}, rows)
		},
	}
}

func (a *app) dbCreate() *cobra.Command {
	var comment string
	var ifNotExists bool
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a database",
		Example: `  strom db create shop --comment "web shop"`,
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			desc := &fluss.DatabaseDescriptor{Comment: comment}
			if err := conn.Admin().CreateDatabase(ctx, args[0], desc, ifNotExists); err != nil {
				return err
			}
			return a.done("created database " + args[0])
		},
	}
	cmd.Flags().StringVar(&comment, "comment", "", "database comment")
	cmd.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the database already exists")
	return cmd
}

func (a *app) dbDrop() *cobra.Command {
	var ifExists, cascade bool
	cmd := &cobra.Command{
		Use:   "drop NAME",
		Short: "Drop a database",
		Example: `  strom db drop shop             # fails if shop still has tables
  strom db drop shop --cascade   # drops its tables too`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			if err := conn.Admin().DropDatabase(ctx, args[0], ifExists, cascade); err != nil {
				return err
			}
			return a.done("dropped database " + args[0])
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed if the database does not exist")
	cmd.Flags().BoolVar(&cascade, "cascade", false, "also drop the database's tables")
	return cmd
}

// done reports a successful change: a line for people, {"ok": true, ...} for scripts.
func (a *app) done(msg string) error {
	if a.json {
		return printJSON(a.io.Out, map[string]any{"ok": true, "message": msg})
	}
	_, err := a.io.Out.Write([]byte(msg + "\n"))
	return err
}
