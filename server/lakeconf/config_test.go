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
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "glue"}, "glue (AWS Glue) is not supported by Strom; supported: jdbc (alias sql: an SQLite database in Iceberg's JDBC layout, the default), hadoop (a local file-system warehouse) or rest"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "hadoop"}, "warehouse must be set for the hadoop catalog"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "hadoop", "datalake.iceberg.warehouse": "s3://bucket/wh"}, "serves a local directory (/path or file:///path), not s3://"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "hadoop", "datalake.iceberg.warehouse": "file:///"}, "other than the root"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "nessie"}, "supported: jdbc (alias sql"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "jdbc", "datalake.iceberg.uri": "jdbc:postgresql://db/iceberg"}, "other JDBC databases are not supported"},
		{map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "rest"}, "uri must be set"},
	} {
		if _, err := ConfigFrom(tc.opts, dir); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want one containing %q", tc.opts, err, tc.err)
		}
	}
}

// TestHadoopCatalogWarehouse checks that a hadoop warehouse given as a path, a relative path or
// a file:// URL is stored as one absolute file:// URL, and that readers are told type hadoop
// (which Java Iceberg's catalog factories accept) and that warehouse, with no uri.
func TestHadoopCatalogWarehouse(t *testing.T) {
	dir := t.TempDir()
	cwd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for wh, want := range map[string]string{
		dir + "/wh":             "file://" + dir + "/wh",
		dir + "/wh/":            "file://" + dir + "/wh",
		"file://" + dir + "/wh": "file://" + dir + "/wh",
		"rel/wh":                "file://" + filepath.Join(cwd, "rel", "wh"),
	} {
		c, err := ConfigFrom(map[string]string{"datalake.format": "iceberg", "datalake.iceberg.type": "Hadoop", "datalake.iceberg.warehouse": wh}, dir)
		if err != nil {
			t.Fatalf("warehouse %q: %v", wh, err)
		}
		if c.Catalog["type"] != CatalogHadoop || c.Catalog["warehouse"] != want {
			t.Errorf("warehouse %q: type %q warehouse %q, want hadoop %q", wh, c.Catalog["type"], c.Catalog["warehouse"], want)
		}
		ro := c.ReaderTableOptions()
		if ro["table.datalake.iceberg.type"] != "hadoop" || ro["table.datalake.iceberg.warehouse"] != want || ro["table.datalake.iceberg.uri"] != "" || ro["table.datalake.iceberg.catalog-impl"] != "" {
			t.Errorf("warehouse %q: reader options %v", wh, ro)
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
