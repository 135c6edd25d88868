package lakeconf

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigFrom(t *testing.T) {
	dir := t.TempDir()
	c, err := ConfigFrom(map[string]string{}, dir)
	if err != nil || c.Enabled() {
		t.Fatalf("no datalake.format: %+v %v", c, err)
	}
	c, err = ConfigFrom(map[string]string{"datalake.format": "Iceberg", "datalake.iceberg.foo": "bar"}, dir)
	if err != nil || !c.Enabled() {
		t.Fatalf("iceberg: %+v %v", c, err)
	}
	want := map[string]string{
		"type": "sql", "name": DefaultCatalogName, "foo": "bar",
		"uri":       filepath.Join(dir, "lake", "catalog.db"),
		"warehouse": "file://" + filepath.Join(dir, "lake", "warehouse"),
	}
	for k, v := range want {
		if c.Catalog[k] != v {
			t.Errorf("%s = %q, want %q", k, c.Catalog[k], v)
		}
	}
	for _, tc := range []struct {
		opts map[string]string
		err  string
	}{
		{map[string]string{"datalake.format": "paimon"}, "only iceberg"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "hive"}, "hive (a Hive metastore) is not supported by Strom; supported: jdbc"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "hadoop"}, "hadoop (a file-system warehouse without a catalog database) is not supported by Strom; supported: jdbc"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "glue"}, "not supported by Strom"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "nessie"}, "supported: jdbc (alias sql"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "jdbc", "datalake.iceberg.uri": "jdbc:postgresql://db/iceberg"}, "other JDBC databases are not supported"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "rest"}, "uri must be set"},
	} {
		if _, err := ConfigFrom(tc.opts, dir); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want one containing %q", tc.opts, err, tc.err)
		}
	}
}

// TestJDBCCatalogName checks Fluss's name of the JDBC catalog: `jdbc` opens the embedded SQLite
// catalog as `sql` does, and a jdbc:sqlite: uri names its file.
func TestJDBCCatalogName(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"jdbc", "JDBC", "sql"} {
		c, err := ConfigFrom(map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": typ}, dir)
		if err != nil || c.Catalog["type"] != CatalogSQL || c.Catalog["uri"] != filepath.Join(dir, "lake", "catalog.db") {
			t.Errorf("type %s: %v, %v; want the embedded catalog", typ, c.Catalog, err)
		}
	}
	c, err := ConfigFrom(map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "jdbc", "datalake.iceberg.uri": "jdbc:sqlite:/x/cat.db"}, dir)
	if err != nil || SQLitePath(c.Catalog["uri"]) != "/x/cat.db" {
		t.Errorf("jdbc:sqlite: uri: %v, %v", c.Catalog, err)
	}
	if got := c.ReaderTableOptions()["table.datalake.iceberg.uri"]; got != "jdbc:sqlite:/x/cat.db" {
		t.Errorf("reader uri %q", got)
	}
}

func TestReaderTableOptions(t *testing.T) {
	dir := t.TempDir()
	c, err := ConfigFrom(map[string]string{"datalake.format": "iceberg", "datalake.iceberg.foo": "bar",
		"datalake.iceberg.jdbc.password": "pw", "datalake.iceberg.s3.secret-access-key": "s"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := c.ReaderTableOptions()
	want := map[string]string{
		"table.datalake.iceberg.catalog-impl": JDBCCatalogImpl,
		"table.datalake.iceberg.name":         DefaultCatalogName,
		"table.datalake.iceberg.uri":          "jdbc:sqlite:" + filepath.Join(dir, "lake", "catalog.db"),
		"table.datalake.iceberg.warehouse":    "file://" + filepath.Join(dir, "lake", "warehouse"),
		"table.datalake.iceberg.foo":          "bar",
	}
	if len(got) != len(want) {
		t.Errorf("options %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if none, _ := ConfigFrom(map[string]string{}, dir); none.ReaderTableOptions() != nil {
		t.Errorf("no lake: options %v, want nil", none.ReaderTableOptions())
	}
}
