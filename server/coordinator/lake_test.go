package coordinator_test

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/laketest"
)

// A lake-enabled table's info carries the lake catalog options readers (the Flink connector's
// $lake tables and union reads) open Iceberg with; a table without the lake carries none, and
// they are never stored: disabling the lake hides them.
func TestTableInfoCarriesLakeCatalogOptions(t *testing.T) {
	dir := t.TempDir()
	opts := laketest.Options(t)
	opts["datalake.iceberg.jdbc.password"] = "pw"
	tn := startNode(t, dir, opts)
	logTable := func(lakeEnabled string) metadata.TableDescriptor {
		return metadata.TableDescriptor{
			Schema:           metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: intType}}},
			BucketCount:      1,
			Properties:       map[string]string{"table.datalake.enabled": lakeEnabled},
			CustomProperties: map[string]string{},
		}
	}
	createTable(t, tn.coord, "lake_on", logTable("true"))
	createTable(t, tn.coord, "lake_off", logTable("false"))

	want := map[string]string{
		"table.datalake.format":               "iceberg",
		"table.datalake.iceberg.catalog-impl": lakeconf.JDBCCatalogImpl,
		"table.datalake.iceberg.name":         lakeconf.DefaultCatalogName,
		"table.datalake.iceberg.uri":          "jdbc:sqlite:" + filepath.Join(dir, "lake", "catalog.db"),
		"table.datalake.iceberg.warehouse":    "file://" + filepath.Join(dir, "lake", "warehouse"),
	}
	check := func(what string, d metadata.TableDescriptor, lakeOn bool) {
		t.Helper()
		for k, v := range want {
			if k == "table.datalake.format" {
				continue
			}
			got, ok := d.Properties[k]
			if lakeOn && got != v {
				t.Errorf("%s: %s = %q, want %q", what, k, got, v)
			}
			if !lakeOn && ok {
				t.Errorf("%s: lake disabled, but %s = %q is served", what, k, got)
			}
		}
		if d.Properties["table.datalake.format"] != "iceberg" {
			t.Errorf("%s: table.datalake.format = %q, want iceberg", what, d.Properties["table.datalake.format"])
		}
		for k := range d.Properties {
			if strings.Contains(k, "password") || k == "table.datalake.iceberg.type" {
				t.Errorf("%s: %s is served", what, k)
			}
		}
	}
	check("GET_TABLE_INFO lake_on", descriptorOf(t, tableInfo(t, tn.coord, "lake_on")), true)
	check("GET_TABLE_INFO lake_off", descriptorOf(t, tableInfo(t, tn.coord, "lake_off")), false)

	var md flusspb.MetadataResponse
	mustCall(t, tn.coord, wire.GetMetadata, &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{tablePath("lake_on")}}, &md)
	if len(md.GetTableMetadata()) != 1 {
		t.Fatalf("METADATA: %d tables", len(md.GetTableMetadata()))
	}
	d, err := metadata.ParseTableDescriptor(md.GetTableMetadata()[0].GetTableJson())
	if err != nil {
		t.Fatal(err)
	}
	check("METADATA lake_on", d, true)

	mustCall(t, tn.coord, wire.AlterTable, &flusspb.AlterTableRequest{TablePath: tablePath("lake_on"),
		IgnoreIfNotExists: proto.Bool(false), ConfigChanges: []*flusspb.PbAlterConfig{setOption("table.datalake.enabled", "false")}}, &flusspb.AlterTableResponse{})
	check("GET_TABLE_INFO lake_on after disabling", descriptorOf(t, tableInfo(t, tn.coord, "lake_on")), false)
}
