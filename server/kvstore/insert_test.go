package kvstore

import (
	"context"

	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// A table with a NOT NULL non-key column cannot take key-only rows: insert_if_not_exists
// refuses a missing key with INVALID_TARGET_COLUMN, stages nothing, and still succeeds for
// keys that all exist.
func TestInsertMissingNotNullColumn(t *testing.T) {
	tbl := usersTable(nil)
	tbl.Schema.Columns[2].Type.NotNull = true
	h := newHarness(t, tbl)
	h.put(nil, up(1, "a", 1))
	c := h.tab.tbl
	k1, _ := row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: 1}})
	k2, _ := row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: 2}})
	if p, err := h.tab.InsertMissingStaged([][]byte{k1}, 1); err != nil || p.staged() {
		t.Fatalf("existing key: staged %v, err %v", p.staged(), err)
	}
	if _, err := h.tab.InsertMissingStaged([][]byte{k1, k2}, 1); ferr.CodeOf(err) != ferr.InvalidTargetColumn {
		t.Fatalf("missing key: err %v, want INVALID_TARGET_COLUMN", err)
	}
	eqStrings(t, "changelog", h.changelog(), []string{"+I(1,a,1)"})
	if got := h.get(2); got != "" {
		t.Fatalf("refused key stored as %q", got)
	}
}

// When every column is in the primary key the merge is not partial: the key-only row is the
// whole row, inserted once per missing key.
func TestInsertMissingAllKeyColumns(t *testing.T) {
	tbl := usersTable(nil)
	tbl.Schema = metadata.Schema{
		Columns:    []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}}},
		PrimaryKey: []string{"id"},
	}
	h := newHarness(t, tbl)
	c := h.tab.tbl
	k, _ := row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: 5}})
	wait, err := h.tab.InsertMissingStaged([][]byte{k, k}, 1)
	if err != nil || !wait.staged() {
		t.Fatalf("staged %v, err %v", wait.staged(), err)
	}
	if err := wait.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.get(5); got != "(5)" {
		t.Fatalf("row %q", got)
	}
	eqStrings(t, "changelog", h.changelog(), []string{"+I(5)"})
}

// BenchmarkInsertMissing measures LOOKUP with insert_if_not_exists writing 1000 new keys per
// call (read-before-write misses, key-only rows, +I changelog with ZSTD, log append without
// fsync, Pebble apply). ns/op is per call; see the keys/s metric.
func BenchmarkInsertMissing(b *testing.B) {
	const keysPerCall = 1000
	h := newHarness(b, usersTable(nil))
	c := h.tab.tbl
	keys := make([][]byte, keysPerCall)
	id := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := range keys {
			var err error
			if keys[j], err = row.EncodeKey(keys[j][:0], c.keyTypes, []row.Datum{{I: id}}); err != nil {
				b.Fatal(err)
			}
			id++
		}
		b.StartTimer()
		durable, err := h.tab.InsertMissingStaged(keys, 1)
		if err != nil || !durable.staged() {
			b.Fatalf("staged %v, err %v", durable.staged(), err)
		}
		if err := durable.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*keysPerCall)/b.Elapsed().Seconds(), "keys/s")
}
