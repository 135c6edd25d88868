package tablet

import (
	"testing"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
)

// lineageEndOffset answers as the leader's EndOffsetForEpoch would, from the lineage alone.
func TestLineageEndOffset(t *testing.T) {
	lin := []cluster.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 50}, {Epoch: 5, StartOffset: 80}}
	unbounded := int64(1<<63 - 1)
	for _, c := range []struct {
		epoch   int32
		wantE   int32
		wantEnd int64
	}{
		{logstore.NoEpoch, logstore.NoEpoch, logstore.NoEpochOffset},
		{0, 0, 0},         // older than every entry: its end is the first entry's start
		{1, 1, 50},        // a known epoch ends where the next starts
		{2, 1, 50},        // an epoch the leader never had: the largest below it
		{3, 3, 80},        //
		{4, 3, 80},        //
		{5, 5, unbounded}, // the leader's own epoch: everything a follower has of it came from it
		{6, logstore.NoEpoch, logstore.NoEpochOffset}, // newer than the leader's: unknown
	} {
		e, end := lineageEndOffset(lin, c.epoch)
		if e != c.wantE || end != c.wantEnd {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.epoch, e, end, c.wantE, c.wantEnd)
		}
	}
	if e, end := lineageEndOffset(nil, 1); e != logstore.NoEpoch || end != logstore.NoEpochOffset {
		t.Errorf("empty lineage: (%d, %d)", e, end)
	}
}

// runLength splits fetched batches where a lineage epoch starts.
func TestRunLengthSplitsAtEpochStarts(t *testing.T) {
	var batches []record.Batch
	for off := int64(0); off < 50; off += 10 {
		b := record.Batch(record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: 10},
			make([]byte, 0)))
		b.SetBaseOffset(off)
		batches = append(batches, b)
	}
	lin := []cluster.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 20}, {Epoch: 3, StartOffset: 40}}
	if n := runLength(batches, lin); n != 2 {
		t.Fatalf("first run %d batches, want 2 (epoch 2 starts at 20)", n)
	}
	if n := runLength(batches[2:], lin); n != 2 {
		t.Fatalf("second run %d batches, want 2 (epoch 3 starts at 40)", n)
	}
	if n := runLength(batches[4:], lin); n != 1 {
		t.Fatalf("last run %d batches, want 1", n)
	}
}
