package fluss

import (
	"testing"
	"time"
)

// A batch rejected for storage backpressure stays queued and is retried after
// WriterBackpressureBackoff, doubling up to 4x; other retriable errors keep the short
// backoff; a non-retriable error completes the batch.
func TestBackpressureRetry(t *testing.T) {
	cfg, err := Config{WriterBackpressureBackoff: 2 * time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	info := newTableInfo(TablePath{"d", "t"}, 1, 1, TableDescriptor{
		Schema:      NewSchema([]Column{NewColumn("id", Int())}),
		BucketCount: 1,
	}.internal(), 0, 0)
	tbl, err := newTable(&Connection{cfg: cfg}, info)
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{t: tbl, conn: tbl.conn, cfg: cfg, queues: map[TableBucket]*bucketQueue{}, memFree: make(chan struct{}), writerID: -1}
	tb := NewTableBucket(1, 0)
	b := newBatch(tb, "")
	q := &bucketQueue{batches: []*writeBatch{b}}
	w.queues[tb] = q

	fail := func(code ErrorCode) time.Duration {
		t.Helper()
		q.inflight = true
		before := time.Now()
		w.handleResultLocked(b, code, "test")
		return q.retryAt.Sub(before)
	}
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		if d := fail(ErrStorageBackpressure); d < want-100*time.Millisecond || d > want+100*time.Millisecond {
			t.Fatalf("backpressure retry %d after %v, want %v", i+1, d, want)
		}
	}
	if d := fail(ErrNotEnoughReplicas); d > time.Second+100*time.Millisecond {
		t.Fatalf("NOT_ENOUGH_REPLICAS retry after %v, want at most 1s", d)
	}
	select {
	case <-b.done:
		t.Fatal("a retriable failure completed the batch")
	default:
	}
	fail(ErrInvalidTable)
	select {
	case <-b.done:
	default:
		t.Fatal("a non-retriable failure left the batch queued")
	}
	if CodeOf(b.err) != ErrInvalidTable {
		t.Fatalf("batch error %v", b.err)
	}
}
