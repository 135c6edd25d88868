package remotelog

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// countingStore counts the single-key reads of a memStore.
type countingStore struct {
	*memStore
	gets, lists atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets.Add(1)
	return s.memStore.Get(ctx, key)
}

func (s *countingStore) List(ctx context.Context, prefix string) ([]meta.KV, error) {
	s.lists.Add(1)
	return s.memStore.List(ctx, prefix)
}

// The due buckets of one table are read in one range read, not one etcd read per bucket:
// each gets its own committed record (or none), and a pass given the record read ahead loads
// the same committed view as one that reads it itself.
func TestPrefetchReadsATablesRecordsInOneRange(t *testing.T) {
	h := newHarness(t, map[string]string{"table.log.tiered.local-segments": "2"})
	h.appendRecords(200)
	first := h.manager(nil)
	pass(first)
	committed := first.state(bucket0).v.Load()
	if committed == nil || committed.man == nil {
		t.Fatal("the first pass committed nothing")
	}

	cs := &countingStore{memStore: h.store}
	m := New(Options{Config: first.opts.Config, Storage: h.storage, Meta: cs, Logger: quiet(), Now: first.opts.Now,
		Buckets: first.opts.Buckets})
	var due []Bucket
	for i := range prefetchRange + 1 {
		due = append(due, Bucket{Bucket: cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: int32(i)}, Table: h.table})
	}
	// Another table's lone due bucket is left to its pass.
	due = append(due, Bucket{Bucket: cluster.Bucket{TableID: 8, PartitionID: cluster.NoPartition, Bucket: 0}, Table: h.table})
	pre := m.prefetchRecords(context.Background(), due)
	if cs.gets.Load() != 0 || cs.lists.Load() != 1 {
		t.Fatalf("%d single reads and %d range reads, want 0 and 1", cs.gets.Load(), cs.lists.Load())
	}
	want, _ := h.store.Get(context.Background(), recordKey(bucket0))
	if p := pre[bucket0]; p == nil || !bytes.Equal(p.raw, want) {
		t.Fatalf("bucket 0's record read ahead: %+v, want %s", p, want)
	}
	for _, b := range due[1 : prefetchRange+1] {
		if p := pre[b.Bucket]; p == nil || p.raw != nil {
			t.Fatalf("%v has no record, read ahead as %+v", b.Bucket, p)
		}
	}
	if p, ok := pre[due[len(due)-1].Bucket]; ok {
		t.Fatalf("a lone due bucket was read ahead: %+v", p)
	}

	st := m.state(bucket0)
	if err := m.passBucket(context.Background(), first.opts.Buckets()[0], st, pre[bucket0]); err != nil {
		t.Fatal(err)
	}
	if got := st.v.Load(); got == nil || got.rec != committed.rec || got.man.EndOffset() != committed.man.EndOffset() {
		t.Fatalf("pass with the record read ahead loaded %+v, want the committed %+v", got, committed)
	}
	if cs.gets.Load() != 0 {
		t.Fatalf("the pass read the record again (%d reads)", cs.gets.Load())
	}
}
