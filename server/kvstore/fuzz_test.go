package kvstore

import (
	"testing"

	"github.com/stromdb/strom/internal/record"
)

// FuzzPut feeds arbitrary key/row bytes through PUT_KV: the row decoder, mergers and
// changelog builder must reject bad input with an error, never panic, and a rejected batch
// must leave the log untouched.
func FuzzPut(f *testing.F) {
	h := newHarness(f, usersTable(nil))
	seed := h.kvBatch(-1, -1, up(1, "alice", 30))
	it := seed.Records()
	k, r, _ := it.Next()
	f.Add(k, r, []byte{0})
	f.Add(k, []byte{}, []byte{0, 2})
	f.Add([]byte{0x80}, []byte{0xff, 0xff}, []byte{})
	f.Fuzz(func(t *testing.T, key, rowBytes, targets []byte) {
		if len(key) == 0 {
			return
		}
		var tc []int32
		for _, b := range targets {
			tc = append(tc, int32(b%5)-1)
		}
		batch, err := record.ParseKvBatch(record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1},
			record.KvRecord{Key: key, Row: rowBytes}))
		if err != nil {
			return
		}
		before := h.log.LogEndOffset()
		if _, err := h.tab.putWait(batch, WriteOptions{TargetColumns: tc}, 1); err != nil && h.log.LogEndOffset() != before {
			t.Fatalf("rejected batch (%v) reached the log", err)
		}
	})
}
