package lake

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/logstore"
)

// With table.datalake.auto-compaction, a primary-key table's small files are rewritten with
// their deletes applied: the rows stay exactly the current state, the file count drops, and
// the newest tiering snapshot (the rewrite) still names the tiered offsets.
func TestAutoCompactionKeepsRowsAndOffsets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	info := pkTable()
	info.Descriptor.Properties[metadata.PropDatalakeAutoCompaction] = "true"
	l, err := logstore.Open(ctx, filepath.Join(dir, "log"), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	buckets := []Bucket{{Table: info, ID: cluster.Bucket{TableID: info.ID, PartitionID: cluster.NoPartition}, Log: LocalLog(l)}}
	cfg, err := ConfigFrom(map[string]string{lakeconf.OptFormat: "iceberg"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(ctx, Options{Config: cfg, Catalog: fakeCatalog{t: info}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()

	model := map[int64]string{}
	var offset int64
	for round := 0; round < 8; round++ {
		var cs []change
		for k := int64(0); k < 6; k++ {
			name := fmt.Sprintf("r%d", round)
			if _, ok := model[k]; ok && (k+int64(round))%3 == 0 {
				cs = append(cs, change{arrowlog.ChangeDelete, k, model[k]})
				delete(model, k)
				continue
			}
			if old, ok := model[k]; ok {
				cs = append(cs, change{arrowlog.ChangeUpdateBefore, k, old}, change{arrowlog.ChangeUpdateAfter, k, name})
			} else {
				cs = append(cs, change{arrowlog.ChangeInsert, k, name})
			}
			model[k] = name
		}
		appendChanges(t, l, info, cs...)
		offset += int64(len(cs))
		if _, err := tr.TierOnce(ctx, buckets); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var want []string
		for _, k := range slices.Sorted(maps.Keys(model)) {
			want = append(want, fmt.Sprintf("%d=%s", k, model[k]))
		}
		got := stripOffsets(scanPK(t, tr, info))
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: rows %v, want %v", round, got, want)
		}
	}
	tbl, err := tr.cat.LoadTable(ctx, Identifier(info.Path))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) >= 8 {
		t.Fatalf("%d data files after 8 rounds: nothing was compacted", len(tasks))
	}
	snap, err := tr.Snapshot(ctx, info, nil)
	if err != nil || snap.Offsets[BucketKey{PartitionID: cluster.NoPartition, Bucket: 0}] != offset {
		t.Fatalf("snapshot %+v %v, want offset %d", snap, err, offset)
	}
}

// stripOffsets drops the "@offset" suffix of scanPK's rows.
func stripOffsets(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		for j := len(r) - 1; j >= 0; j-- {
			if r[j] == '@' {
				r = r[:j]
				break
			}
		}
		out[i] = r
	}
	return out
}
