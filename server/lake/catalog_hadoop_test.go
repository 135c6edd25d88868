package lake

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/logstore"
)

// hadoopTierer opens a tierer on a `datalake.iceberg.type: hadoop` catalog rooted at warehouse.
func hadoopTierer(t *testing.T, dir, warehouse string, info *cluster.TableInfo) *Tierer {
	t.Helper()
	cfg, err := ConfigFrom(map[string]string{lakeconf.OptFormat: "iceberg",
		lakeconf.OptIcebergPrefix + "type": "hadoop", lakeconf.OptIcebergPrefix + "warehouse": warehouse}, dir)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), Options{Config: cfg, Catalog: fakeCatalog{t: info}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if _, ok := tr.cat.(*hadoop.Catalog); !ok {
		t.Fatalf("type hadoop opened a %T, want iceberg-go's *hadoop.Catalog", tr.cat)
	}
	return tr
}

// freshHadoopCatalog opens the warehouse as a reader would, with no state of the tierer: the
// tables are found from the directory layout alone.
func freshHadoopCatalog(t *testing.T, warehouse string) catalog.Catalog {
	t.Helper()
	cat, err := catalog.Load(context.Background(), "reader", iceberg.Properties{"type": "hadoop", "warehouse": warehouse})
	if err != nil {
		t.Fatalf("open the warehouse afresh: %v", err)
	}
	t.Cleanup(func() { cat.(*hadoop.Catalog).Close() })
	return cat
}

// checkHadoopLayout checks the directory layout of Java Iceberg's HadoopCatalog, which Spark,
// Flink and pyiceberg (StaticTable on the metadata file) read: <warehouse>/<db>/<table>/metadata
// holds vN.metadata.json for N = 1.. and version-hint.text naming the highest N.
func checkHadoopLayout(t *testing.T, warehouse string, p cluster.TablePath) {
	t.Helper()
	meta := filepath.Join(warehouse, p.Database, p.Table, "metadata")
	hint, err := os.ReadFile(filepath.Join(meta, "version-hint.text"))
	if err != nil {
		t.Fatalf("version hint: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hint)))
	if err != nil {
		t.Fatalf("version-hint.text = %q: %v", hint, err)
	}
	entries, err := os.ReadDir(meta)
	if err != nil {
		t.Fatal(err)
	}
	var versions []int
	for _, e := range entries {
		if v, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "v"), ".metadata.json"); ok && strings.HasPrefix(e.Name(), "v") {
			i, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("metadata file %s", e.Name())
			}
			versions = append(versions, i)
		}
	}
	slices.Sort(versions)
	// Creating the table is v1 and each tiering round commits at least one more version.
	if len(versions) < 2 || versions[0] != 1 || versions[len(versions)-1] != n {
		t.Fatalf("%s: metadata versions %v, version hint %d; want v1..v%d", meta, versions, n, n)
	}
	if _, err := os.Stat(filepath.Join(warehouse, p.Database, p.Table, "data")); err != nil {
		t.Fatalf("data directory under the table: %v", err)
	}
}

// TestTierIntoHadoopWarehouse tiers a log table and a primary-key table into a hadoop
// warehouse given as a file:// URL and reads both back through a freshly opened hadoop
// catalog, as another engine would read the warehouse.
func TestTierIntoHadoopWarehouse(t *testing.T) {
	ctx := context.Background()
	warehouse := filepath.Join(t.TempDir(), "iceberg")

	h := newHarness(t, 2)
	h.write(0, 3)
	h.write(1, 2)
	tr := hadoopTierer(t, h.dir, "file://"+warehouse, h.info)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.write(0, 4)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.checkExactly(h.scanCatalog(freshHadoopCatalog(t, warehouse)), 9)
	checkHadoopLayout(t, warehouse, h.info.Path)

	// A restarted tierer resumes from the offsets in the warehouse: nothing is tiered twice.
	tr.Close()
	tr = hadoopTierer(t, h.dir, "file://"+warehouse, h.info)
	h.write(1, 1)
	if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
		t.Fatal(err)
	}
	h.checkExactly(h.scanCatalog(freshHadoopCatalog(t, warehouse)), 10)

	// The primary-key table goes into the same warehouse (a plain path this time), merge on read.
	info := pkTable()
	l, err := logstore.Open(ctx, filepath.Join(h.dir, "pklog"), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	buckets := []Bucket{{Table: info, ID: cluster.Bucket{TableID: info.ID, PartitionID: cluster.NoPartition}, Log: LocalLog(l)}}
	pk := hadoopTierer(t, h.dir, warehouse, info)
	const I, UB, UA, D = arrowlog.ChangeInsert, arrowlog.ChangeUpdateBefore, arrowlog.ChangeUpdateAfter, arrowlog.ChangeDelete
	appendChanges(t, l, info, change{I, 1, "a"}, change{I, 2, "b"}, change{I, 3, "c"}) // offsets 0-2
	if _, err := pk.TierOnce(ctx, buckets); err != nil {
		t.Fatal(err)
	}
	appendChanges(t, l, info, change{UB, 1, "a"}, change{UA, 1, "a2"}, change{D, 2, "b"}) // 3-5
	if _, err := pk.TierOnce(ctx, buckets); err != nil {
		t.Fatal(err)
	}
	if got, want := scanPKCatalog(t, freshHadoopCatalog(t, warehouse), info), []string{"1=a2@4", "3=c@2"}; !slices.Equal(got, want) {
		t.Fatalf("primary-key table read afresh: %v, want %v", got, want)
	}
	checkHadoopLayout(t, warehouse, info.Path)

	// Both tables are listed under their database, as a reader browsing the warehouse sees them.
	var names []string
	for id, err := range freshHadoopCatalog(t, warehouse).ListTables(ctx, []string{"fluss"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(id, "."))
	}
	slices.Sort(names)
	if want := []string{"fluss.events", "fluss.users"}; !slices.Equal(names, want) {
		t.Fatalf("tables in the warehouse: %v, want %v", names, want)
	}
}

// TestHiveAndGlueRefusedAtStart checks that the catalog types Strom does not open fail when the
// configuration is read, naming what is supported, and never reach iceberg-go's registry.
func TestHiveAndGlueRefusedAtStart(t *testing.T) {
	for _, typ := range []string{"hive", "glue"} {
		_, err := ConfigFrom(map[string]string{lakeconf.OptFormat: "iceberg", lakeconf.OptIcebergPrefix + "type": typ,
			lakeconf.OptIcebergPrefix + "warehouse": t.TempDir()}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "datalake.iceberg.type: "+typ) ||
			!strings.Contains(err.Error(), "supported: jdbc") || !strings.Contains(err.Error(), "hadoop") || !strings.Contains(err.Error(), "rest") {
			t.Errorf("type %s: error %v, want a refusal naming jdbc, hadoop and rest", typ, err)
		}
	}
}
