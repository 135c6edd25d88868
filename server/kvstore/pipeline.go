package kvstore

import (
	"slices"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// The PUT_KV write path is a pipeline with three steps (docs/architecture.md, "PUT_KV
// pipeline"):
//
//  1. stage (PutStaged, under mu, in the connection's request order): merge every record with
//     the current state, encode the changelog, write it to the log without waiting for the
//     fsync, and append the batch to the queue, the pre-write buffer the next batch merges
//     against. No disk wait happens here, so the connection goes on to its next request.
//  2. durable (Pending.Wait, durable.go, run off the connection's loop): wait until the
//     log has synced the changelog — replicated, until the HW passes it. Concurrent waiters
//     share one fdatasync (group commit, logstore.Log.AppendStaged).
//  3. apply (applyDurable, the end of Pending.Wait): move every queued batch that is now durable from the queue into
//     Pebble as one Pebble batch, together with the applied offset.
//
// Invariants:
//   - Pebble only ever holds state whose changelog is durable per the log's flush policy
//     (below the log's high watermark), so lookups, which read Pebble alone, never see a
//     write that a crash could take back, and the stored applied offset never passes the
//     durable log end.
//   - queue holds the staged batches in offset order; batches are applied strictly in that
//     order, one applier at a time (applyMu).
//   - A key's current value is its value in the newest queued batch that wrote it, else
//     Pebble's; a batch leaves the queue only after Pebble holds its values (statebatch.go).
//   - A PUT_KV is answered only after its own batch is applied, so a client that got the
//     answer reads its write back by lookup.

// PutStaged stages one PUT_KV bucket batch (docs/primary-keys.md §2: merge, changelog, append)
// with the request's options and returns the log end offset after it and the write's Pending,
// whose Wait is the rest of the pipeline. Callers keep the order of PutStaged calls
// (idempotent writers depend on it) but may wait concurrently and off their request loop;
// the write must not be acknowledged before Wait returns nil.
func (t *Tablet) PutStaged(kv record.KvBatch, o WriteOptions, nowMs int64) (int64, Pending, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pipe.stage(kv, o, nowMs)
}

// applyDurable applies, in offset order, every queued batch whose changelog is durable (below
// the log's high watermark) to Pebble in one batch with the new applied offset, then removes
// them from the queue. It returns once the batch ending at end is
// applied, or the tablet's failure.
func (pl *pipeline) applyDurable(end int64) error {
	t := pl.t
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	return pl.applyDurableLocked(end)
}

// applyDurableLocked is applyDurable for a caller holding applyMu.
func (pl *pipeline) applyDurableLocked(end int64) error {
	t := pl.t
	t.mu.Lock()
	pl.dropApplied()
	t.mu.Unlock()
	if t.applied.Load() >= end {
		return nil // another waiter applied it, or a rebuild replayed it from the log
	}
	hw := t.log.HighWatermark()
	t.mu.Lock()
	if t.failed != nil {
		t.mu.Unlock()
		return t.failed
	}
	n := 0
	for n < len(t.queue) && t.queue[n].end <= hw {
		n++
	}
	ready := append(pl.readyScratch[:0], t.queue[:n]...)
	gen := t.rowGen.Load() // the generation the commit below belongs to (rowcache.go)
	t.mu.Unlock()
	if n == 0 {
		// Our batch is durable (our wait returned) but the HW does not cover it: only a
		// duplicate whose original is durable gets here, and then it is applied already.
		if t.applied.Load() >= end || hw < end {
			return nil
		}
		return ferr.New(ferr.KvStorageException, "kv state of %s: offset %d durable but not queued", t.bucket, end)
	}
	if t.testHookAfterAppend != nil {
		if err := t.testHookAfterAppend(); err != nil {
			return pl.failAfterAppend(err)
		}
	}
	last := ready[n-1].end
	seq, err := pl.commitToPebble(ready, last)
	if err != nil {
		return pl.failAfterAppend(err)
	}
	t.fillRows(ready, gen)
	t.applied.Store(last)
	flushes := t.store.flushes.Load()
	t.mu.Lock()
	t.queue = t.queue[n:]
	if len(t.queue) == 0 {
		t.queue = t.queue[:0:0] // let the backing array go once drained
	}
	for _, sb := range ready {
		for k, v := range sb.writes {
			// Into the memtable and live-key filters before the key leaves the pre-write
			// buffer (memkeys.go, livekeys.go).
			h := keyHash(k)
			t.mem.add(h, seq, flushes)
			if v != nil {
				t.live.add(h)
			}
		}
		pl.recycle(sb)
	}
	t.mu.Unlock()
	clear(ready)
	pl.readyScratch = ready[:0]
	return nil
}

// dropApplied removes from the queue the batches the state already
// reflects: a rebuild from the changelog (repair.go) replays every appended batch, including
// staged ones. Caller holds applyMu and mu.
func (pl *pipeline) dropApplied() {
	t := pl.t
	applied := t.applied.Load()
	n := 0
	for n < len(t.queue) && t.queue[n].end <= applied {
		pl.recycle(t.queue[n])
		n++
	}
	if n > 0 {
		t.queue = t.queue[n:]
	}
}

// commitToPebble writes the batches, in offset order, and the applied offset last in one
// Pebble batch; within a Pebble batch a later write of a key shadows an earlier one. Pebble's
// WAL is off: the changelog is the write-ahead log (recover replays it). It returns the
// largest Pebble sequence number of the commit.
func (pl *pipeline) commitToPebble(ready []*stagedBatch, last int64) (uint64, error) {
	t := pl.t
	b := t.store.db.NewBatch()
	defer b.Close()
	for _, sb := range ready {
		// In key order: the memtable insert of each key then starts from the previous one's
		// position in the skiplist instead of searching from the top.
		keys := make([]string, 0, len(sb.writes))
		for k := range sb.writes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := sb.writes[k]
			var err error
			if v == nil {
				err = b.Delete(bytesOf(k), nil)
			} else {
				err = b.Set(bytesOf(k), v, nil)
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if err := b.Set(t.meta, appendOffset(nil, last), nil); err != nil {
		return 0, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, err
	}
	return b.SeqNum() + uint64(b.Count()), nil
}

// failAfterAppend records that the state no longer matches the log (a changelog was appended
// but could not be made durable or applied): writes are refused until the tablet is reopened,
// which replays the changelog from the applied offset.
func (pl *pipeline) failAfterAppend(err error) error {
	t := pl.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed == nil {
		t.failed = ferr.New(ferr.KvStorageException, "kv state of %s failed after the changelog append: %v", t.bucket, err)
	}
	return t.failed
}

// newStaged returns an empty staged batch, reusing a recycled one. Caller holds mu.
func (pl *pipeline) newStaged() *stagedBatch {
	if n := len(pl.free); n > 0 {
		sb := pl.free[n-1]
		pl.free = pl.free[:n-1]
		return sb
	}
	return &stagedBatch{writes: make(map[string][]byte)}
}

// recycle keeps sb for reuse (a few; a map that grew large is dropped). Caller holds mu.
func (pl *pipeline) recycle(sb *stagedBatch) {
	if len(sb.writes) > 1<<16 || len(pl.free) >= 4 {
		return
	}
	clear(sb.writes)
	sb.end = 0
	sb.arena = nil // values read from the old arena may still be in use
	pl.free = append(pl.free, sb)
}
