package fluss_test

import (
	"fmt"
	"testing"

	"github.com/stromdb/strom/fluss"
)

// ALTER TABLE through the client: options set and reset, an unalterable option refused whole,
// and an added column that old rows read as NULL; GET_TABLE_STATS counts live keys.
func TestAlterTableAndStats(t *testing.T) {
	conn, ctx := connect(t)
	admin := conn.Admin()
	tbl := createTable(t, ctx, conn, "altered", pkDesc(2))
	path := tbl.Info().Path
	w, err := tbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := w.Upsert(ctx, fluss.Row{int32(i), "u", int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()

	stats, err := admin.GetTableStats(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, n := range stats {
		rows += n
	}
	if len(stats) != 2 || rows != 5 {
		t.Fatalf("stats %v: want 2 buckets holding 5 rows", stats)
	}

	if err := admin.AlterTable(ctx, path, []fluss.TableChange{fluss.SetOption("team", "analytics")}, false); err != nil {
		t.Fatal(err)
	}
	// An option Fluss does not allow to change refuses the whole request.
	err = admin.AlterTable(ctx, path, []fluss.TableChange{fluss.SetOption("owner", "x"), fluss.SetOption("table.replication.factor", "3")}, false)
	mustCode(t, err, fluss.ErrInvalidAlterTable)
	info, err := admin.GetTableInfo(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CustomProperties(); got["team"] != "analytics" || got["owner"] != "" {
		t.Fatalf("custom properties after alter: %v", got)
	}
	if err := admin.AlterTable(ctx, path, []fluss.TableChange{fluss.ResetOption("team")}, false); err != nil {
		t.Fatal(err)
	}

	if err := admin.AlterTable(ctx, path, []fluss.TableChange{fluss.AddColumn("email", fluss.String(), "added later")}, false); err != nil {
		t.Fatal(err)
	}
	info, err = admin.GetTableInfo(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if info.SchemaID != 2 || len(info.Schema().Columns) != 4 || info.CustomProperties()["team"] != "" {
		t.Fatalf("after ADD COLUMN: schema %d with %d columns, custom %v", info.SchemaID, len(info.Schema().Columns), info.CustomProperties())
	}
	// Rows stored before the column read it as NULL; a row of the new schema read through
	// a Table opened before the change drops the column that Table does not know.
	newTbl, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := newTbl.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nw.Upsert(ctx, fluss.Row{int32(9), "v", int64(9), "v@x"}); err != nil {
		t.Fatal(err)
	}
	if err := nw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	nw.Close()
	for _, tc := range []struct {
		tbl  *fluss.Table
		key  int32
		want string
	}{
		{newTbl, 1, "[1 u 1 <nil>]"}, {newTbl, 9, "[9 v 9 v@x]"}, {tbl, 1, "[1 u 1]"}, {tbl, 9, "[9 v 9]"},
	} {
		lk, err := tc.tbl.NewLookup().CreateLookuper()
		if err != nil {
			t.Fatal(err)
		}
		row, err := lk.Lookup(ctx, fluss.Row{tc.key})
		if err != nil {
			t.Fatalf("lookup %d (a Table of schema %d): %v", tc.key, tc.tbl.Info().SchemaID, err)
		}
		if got := fmt.Sprint(row); got != tc.want {
			t.Fatalf("lookup %d (a Table of schema %d): %s, want %s", tc.key, tc.tbl.Info().SchemaID, got, tc.want)
		}
	}
	var scanned int
	for b := range int32(2) {
		sc, err := newTbl.NewScan().Limit(10).CreateBucketBatchScanner(fluss.NewTableBucket(info.TableID, b))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := sc.Rows(ctx)
		if err != nil {
			t.Fatalf("limit scan of bucket %d over two schemas: %v", b, err)
		}
		scanned += len(rows)
	}
	if scanned != 6 {
		t.Fatalf("limit scan read %d rows, want 6", scanned)
	}
	if err := admin.AlterTable(ctx, fluss.NewTablePath("it", "missing"), []fluss.TableChange{fluss.SetOption("a", "b")}, true); err != nil {
		t.Fatalf("ignoreIfNotExists: %v", err)
	}
}

// Dynamic cluster configs: set, described with their source, refused for a static option,
// reset.
func TestClusterConfigs(t *testing.T) {
	needsStrom(t) // changes server-wide options
	conn, ctx := connect(t)
	admin := conn.Admin()
	const key = "kv.snapshot.interval"
	if err := admin.AlterClusterConfigs(ctx, []fluss.ConfigChange{fluss.SetConfig(key, "5min")}); err != nil {
		t.Fatal(err)
	}
	source := func() (string, string) {
		t.Helper()
		cfgs, err := admin.DescribeClusterConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cfgs {
			if c.Key == key && c.Source == "DYNAMIC_SERVER_CONFIG" {
				return c.Value, c.Source
			}
		}
		return "", ""
	}
	if v, _ := source(); v != "5min" {
		t.Fatalf("%s described as %q, want the dynamic 5min", key, v)
	}
	err := admin.AlterClusterConfigs(ctx, []fluss.ConfigChange{fluss.SetConfig("default.bucket.number", "9")})
	mustCode(t, err, fluss.ErrConfig)
	if err := admin.AlterClusterConfigs(ctx, []fluss.ConfigChange{fluss.ResetConfig(key)}); err != nil {
		t.Fatal(err)
	}
	if v, src := source(); src != "" {
		t.Fatalf("%s still dynamic (%q) after reset", key, v)
	}
}
