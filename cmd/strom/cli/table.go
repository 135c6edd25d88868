package cli

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/metadata"
)

// tableSpec is a table definition as `table describe --json` prints it and `table create
// --schema FILE` reads it (JSON or YAML), so one table's definition can seed another.
type tableSpec struct {
	Columns       []columnSpec      `json:"columns" yaml:"columns"`
	PrimaryKey    []string          `json:"primary_key,omitempty" yaml:"primary_key"`
	BucketKey     []string          `json:"bucket_key,omitempty" yaml:"bucket_key"`
	PartitionKeys []string          `json:"partition_keys,omitempty" yaml:"partition_keys"`
	Buckets       int32             `json:"buckets,omitempty" yaml:"buckets"`
	Comment       string            `json:"comment,omitempty" yaml:"comment"`
	Properties    map[string]string `json:"properties,omitempty" yaml:"properties"`
	Custom        map[string]string `json:"custom_properties,omitempty" yaml:"custom_properties"`
}

type columnSpec struct {
	Name    string `json:"name" yaml:"name"`
	Type    string `json:"type" yaml:"type"`
	Comment string `json:"comment,omitempty" yaml:"comment"`
}

// tableDescription is `table describe --json`: the spec plus what the cluster assigned.
type tableDescription struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	TableID  int64  `json:"table_id"`
	SchemaID int32  `json:"schema_id"`
	tableSpec
	Created  string `json:"created,omitempty"`
	Modified string `json:"modified,omitempty"`
}

func specOf(info *fluss.TableInfo) tableSpec {
	d := info.Descriptor
	s := tableSpec{
		PrimaryKey: info.PrimaryKeys(), BucketKey: info.BucketKeys(), PartitionKeys: info.PartitionKeys(),
		Buckets: info.NumBuckets(), Properties: info.Properties(), Custom: info.CustomProperties(),
	}
	if c, ok := info.Comment(); ok {
		s.Comment = c
	}
	for _, c := range d.Schema.Columns {
		s.Columns = append(s.Columns, columnSpec{Name: c.Name, Type: c.Type.String(), Comment: c.Comment})
	}
	return s
}

// descriptor builds the TableDescriptor to create.
func (s tableSpec) descriptor() (fluss.TableDescriptor, error) {
	if len(s.Columns) == 0 {
		return fluss.TableDescriptor{}, usagef("a table needs columns: pass --column NAME:TYPE (repeatable) or --schema FILE")
	}
	cols := make([]fluss.Column, len(s.Columns))
	for i, c := range s.Columns {
		t, err := ParseType(c.Type)
		if err != nil {
			return fluss.TableDescriptor{}, usagef("column %s: %v", c.Name, err)
		}
		cols[i] = fluss.NewColumn(c.Name, t)
		cols[i].Comment = c.Comment
	}
	return fluss.TableDescriptor{
		Schema: fluss.NewSchema(cols, s.PrimaryKey...), PartitionKeys: s.PartitionKeys, BucketKeys: s.BucketKey,
		BucketCount: s.Buckets, Comment: s.Comment,
		Properties: s.Properties, CustomProperties: s.Custom,
	}, nil
}

func (a *app) tableCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "table",
		Short: "List, describe, create and drop tables",
		Example: `  strom table ls
  strom table describe shop.orders
  strom table create shop.events -c 'ts:TIMESTAMP_LTZ(3)' -c user:STRING -c action:STRING --buckets 8
  strom table drop shop.events`,
	}
	cmd.AddCommand(a.tableLs(), a.tableDescribe(), a.tableCreate(), a.tableDrop())
	return group(cmd)
}

func (a *app) tableLs() *cobra.Command {
	return &cobra.Command{
		Use:     "ls [DATABASE]",
		Aliases: []string{"list"},
		Short:   "List the tables of one or all databases",
		Example: `  strom table ls          # every database
  strom table ls shop --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			admin := conn.Admin()
			dbs := args
			if len(dbs) == 0 {
				if dbs, err = admin.ListDatabases(ctx); err != nil {
					return err
				}
				sortStrings(dbs)
			}
			type tableJSON struct {
				Database      string   `json:"database"`
				Table         string   `json:"table"`
				Kind          string   `json:"kind"`
				Buckets       int32    `json:"buckets"`
				PrimaryKey    []string `json:"primary_key,omitempty"`
				PartitionKeys []string `json:"partition_keys,omitempty"`
			}
			out := []tableJSON{}
			for _, db := range dbs {
				names, err := admin.ListTables(ctx, db)
				if err != nil {
					return a.didYouMean(ctx, fluss.NewTablePath(db, ""), err)
				}
				sortStrings(names)
				for _, n := range names {
					info, err := admin.GetTableInfo(ctx, fluss.NewTablePath(db, n))
					if err != nil {
						return err
					}
					out = append(out, tableJSON{Database: db, Table: n, Kind: tableKind(info), Buckets: info.NumBuckets(),
						PrimaryKey: info.PrimaryKeys(), PartitionKeys: info.PartitionKeys()})
				}
			}
			if a.json {
				return printJSON(a.io.Out, out)
			}
			rows := make([][]string, len(out))
			for i, t := range out {
				rows[i] = []string{t.Database, t.Table, t.Kind, itoa(t.Buckets), strings.Join(t.PrimaryKey, ","), strings.Join(t.PartitionKeys, ",")}
			}
			return printTable(a.io.Out, []string{"DATABASE", "TABLE", "KIND", "BUCKETS", "PRIMARY KEY", "PARTITIONED BY"}, rows)
		},
	}
}

func tableKind(info *fluss.TableInfo) string {
	if info.HasPrimaryKey() {
		return "primary-key"
	}
	return "log"
}

func (a *app) tableDescribe() *cobra.Command {
	return &cobra.Command{
		Use:     "describe DATABASE.TABLE",
		Aliases: []string{"desc", "show"},
		Short:   "Show a table's columns, keys, buckets and properties",
		Long: `Show a table's columns, keys, buckets and properties. With --json the output is also a
valid --schema file for 'strom table create'.`,
		Example: `  strom table describe shop.orders
  strom table describe shop.orders --json > orders.json
  strom table create shop.orders_copy --schema orders.json`,
		Args:              exactArgs(1, "DATABASE.TABLE"),
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, err := tablePath(args[0])
			if err != nil {
				return err
			}
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			info, err := conn.Admin().GetTableInfo(ctx, path)
			if err != nil {
				return a.didYouMean(ctx, path, err)
			}
			spec := specOf(info)
			if a.json {
				return printJSON(a.io.Out, tableDescription{Database: path.Database, Table: path.Table, TableID: info.TableID,
					SchemaID: info.SchemaID, tableSpec: spec, Created: formatMillis(info.CreatedTime), Modified: formatMillis(info.ModifiedTime)})
			}
			w := a.io.Out
			kv := [][]string{
				{"Table:", path.String()},
				{"Kind:", tableKind(info)},
				{"Table id:", itoa(info.TableID)},
				{"Schema id:", itoa(info.SchemaID)},
				{"Primary key:", orNone(spec.PrimaryKey)},
				{"Bucket key:", orNone(spec.BucketKey)},
				{"Partitioned by:", orNone(spec.PartitionKeys)},
				{"Buckets:", itoa(spec.Buckets)},
			}
			if spec.Comment != "" {
				kv = append(kv, []string{"Comment:", spec.Comment})
			}
			kv = append(kv, []string{"Created:", formatMillis(info.CreatedTime)})
			if err := printKV(w, kv); err != nil {
				return err
			}
			fmt.Fprintln(w)
			rows := make([][]string, len(spec.Columns))
			for i, c := range spec.Columns {
				rows[i] = []string{c.Name, c.Type, c.Comment}
			}
			if err := printTable(w, []string{"COLUMN", "TYPE", "COMMENT"}, rows); err != nil {
				return err
			}
			props := maps.Clone(spec.Properties)
			maps.Copy(props, spec.Custom)
			if len(props) > 0 {
				fmt.Fprintln(w)
				var prow [][]string
				for _, k := range slices.Sorted(maps.Keys(props)) {
					prow = append(prow, []string{k, props[k]})
				}
				return printTable(w, []string{"PROPERTY", "VALUE"}, prow)
			}
			return nil
		},
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

// printKV writes label/value pairs with the values aligned.
func printKV(w interface{ Write([]byte) (int, error) }, kv [][]string) error {
	width := 0
	for _, p := range kv {
		width = max(width, len(p[0]))
	}
	var b bytes.Buffer
	for _, p := range kv {
		fmt.Fprintf(&b, "%-*s %s\n", width, p[0], oneLine(p[1]))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (a *app) tableCreate() *cobra.Command {
	var (
		schemaFile  string
		columns     []string
		props       []string
		ifNotExists bool
		spec        tableSpec
	)
	cmd := &cobra.Command{
		Use:   "create DATABASE.TABLE",
		Short: "Create a table from flags or a JSON/YAML schema file",
		Long: `Create a table. Give the columns as --column NAME:TYPE (repeatable; Fluss SQL types such as
INT, BIGINT NOT NULL, STRING, DECIMAL(10,2), TIMESTAMP(3), TIMESTAMP_LTZ(3), DATE, BYTES,
ARRAY<STRING>, MAP<STRING,INT>, ROW<a INT, b STRING>; quote a type with parentheses, angle
brackets or spaces for the shell: -c 'price:DECIMAL(10,2)'), or all of it in a --schema file:

  columns:
    - {name: id, type: BIGINT}
    - {name: name, type: STRING, comment: display name}
  primary_key: [id]
  buckets: 4
  properties: {table.log.ttl: 7d}

A table with --primary-key is a primary-key table (upserts, lookups, changelog); without,
a log table (appends). Flags override the file.`,
		Example: `  strom table create shop.orders -c id:BIGINT -c item:STRING -c 'price:DECIMAL(10,2)' --primary-key id
  strom table create shop.clicks -c 'ts:TIMESTAMP_LTZ(3)' -c url:STRING -c dt:STRING --partition-key dt \
      --property table.auto-partition.enabled=true --property table.auto-partition.time-unit=DAY
  strom table create shop.orders --schema orders.yaml`,
		Args: exactArgs(1, "DATABASE.TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, err := tablePath(args[0])
			if err != nil {
				return err
			}
			s := tableSpec{}
			if schemaFile != "" {
				data, err := os.ReadFile(schemaFile)
				if err != nil {
					return err
				}
				if err := yaml.Unmarshal(data, &s); err != nil {
					return usagef("--schema %s: %v", schemaFile, err)
				}
			}
			for _, c := range columns {
				name, typ, ok := strings.Cut(c, ":")
				if !ok {
					name, typ, ok = strings.Cut(strings.TrimSpace(c), " ")
				}
				if !ok || strings.TrimSpace(name) == "" {
					return usagef("--column %q: want NAME:TYPE, e.g. id:BIGINT", c)
				}
				s.Columns = append(s.Columns, columnSpec{Name: strings.TrimSpace(name), Type: strings.TrimSpace(typ)})
			}
			f := cmd.Flags()
			if f.Changed("primary-key") {
				s.PrimaryKey = spec.PrimaryKey
			}
			if f.Changed("bucket-key") {
				s.BucketKey = spec.BucketKey
			}
			if f.Changed("partition-key") {
				s.PartitionKeys = spec.PartitionKeys
			}
			if f.Changed("buckets") {
				s.Buckets = spec.Buckets
			}
			if f.Changed("comment") {
				s.Comment = spec.Comment
			}
			for _, p := range props {
				k, v, ok := strings.Cut(p, "=")
				if !ok {
					return usagef("--property %q: want KEY=VALUE", p)
				}
				if s.Properties == nil {
					s.Properties = map[string]string{}
				}
				if s.Custom == nil {
					s.Custom = map[string]string{}
				}
				if metadata.IsTableProperty(k) {
					s.Properties[k] = v
				} else {
					s.Custom[k] = v
				}
			}
			desc, err := s.descriptor()
			if err != nil {
				return err
			}
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			if err := conn.Admin().CreateTable(ctx, path, desc, ifNotExists); err != nil {
				return err
			}
			return a.done("created table " + path.String())
		},
	}
	f := cmd.Flags()
	f.StringVar(&schemaFile, "schema", "", "JSON or YAML file with the table definition (see above)")
	f.StringArrayVarP(&columns, "column", "c", nil, "column NAME:TYPE (repeatable, in order)")
	f.StringSliceVar(&spec.PrimaryKey, "primary-key", nil, "primary-key columns (makes a primary-key table)")
	f.StringSliceVar(&spec.BucketKey, "bucket-key", nil, "bucket-key columns (default: the primary key without partition keys)")
	f.StringSliceVar(&spec.PartitionKeys, "partition-key", nil, "partition columns")
	f.Int32Var(&spec.Buckets, "buckets", 0, "number of buckets (default: the server's default.bucket.number)")
	f.StringVar(&spec.Comment, "comment", "", "table comment")
	f.StringArrayVar(&props, "property", nil, "table option KEY=VALUE, e.g. table.log.ttl=7d (repeatable)")
	f.BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the table already exists")
	return cmd
}

func (a *app) tableDrop() *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:               "drop DATABASE.TABLE",
		Short:             "Drop a table and its data",
		Example:           `  strom table drop shop.orders`,
		Args:              exactArgs(1, "DATABASE.TABLE"),
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, err := tablePath(args[0])
			if err != nil {
				return err
			}
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			if err := conn.Admin().DropTable(ctx, path, ifExists); err != nil {
				return a.didYouMean(ctx, path, err)
			}
			return a.done("dropped table " + path.String())
		},
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed if the table does not exist")
	return cmd
}
