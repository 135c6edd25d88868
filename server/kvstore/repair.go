package kvstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/ferr"
)

// Damage to a bucket's state is handled here. The changelog is the source of truth; Pebble
// (without its WAL) only ever holds state derived from it. Two kinds of damage:
//
//   - The changelog cannot back the state: it is offline (a corrupt batch, see
//     logstore.CorruptionError), it ends before the state's applied offset (Pebble ahead of
//     a log that lost acknowledged batches), or it starts after it (the batches needed to
//     catch up were deleted). Rebuilding from such a log would silently lose acknowledged
//     writes, so the tablet goes offline instead (KV_STORAGE_EXCEPTION) with an ERROR line,
//     until an operator acts: `strom repair-log` for a corrupt log, after which the state is
//     rebuilt from what remains (logstore.Log.OperatorTruncation).
//   - Pebble reports corruption (a flipped byte in a table file; pebble.IsCorruptionError). The
//     state is rebuilt from the changelog, which must then be complete (log start 0): a range
//     deletion over the bucket's keys, written above the damaged table, and a replay of the
//     whole changelog. Reads of the bucket then stop at the newer data and the tombstone and
//     no longer reach the damaged block. Requests meanwhile get KV_STORAGE_EXCEPTION (Fluss
//     clients retry it); Put waits for the rebuild (it holds Tablet.mu).

// offlineError returns the error requests get while the tablet is offline or rebuilding.
func (t *Tablet) offlineError() error {
	if p := t.offline.Load(); p != nil {
		return *p
	}
	return nil
}

// goOffline takes the tablet offline for good (until reopened after an operator's repair):
// reads and writes get err, which carries KV_STORAGE_EXCEPTION. The caller owns t.mu or the
// tablet is not shared yet.
func (t *Tablet) goOffline(reason string, args ...any) error {
	msg := fmt.Sprintf(reason, args...)
	var err error = ferr.New(ferr.KvStorageException, "the state of bucket %s is offline: %s", t.bucket, msg)
	t.offline.Store(&err)
	t.failed = err
	t.store.log.Error("kvstore: bucket state offline", "bucket", t.bucket, "reason", msg,
		"log_dir", t.log.Dir())
	return err
}

// storageError turns a Pebble read error of operation op into the KV_STORAGE_EXCEPTION the
// client gets. If Pebble reports corruption it also starts (once) a rebuild of the bucket's
// state from its changelog in the background.
func (t *Tablet) storageError(op string, err error) error {
	if pebble.IsCorruptionError(err) && t.rebuilding.CompareAndSwap(false, true) {
		t.store.log.Error("kvstore: corrupt state table; rebuilding the bucket's state from its changelog",
			"bucket", t.bucket, "op", op, "err", err)
		var rerr error = ferr.New(ferr.KvStorageException, "the state of bucket %s is being rebuilt from its changelog after a storage corruption", t.bucket)
		t.offline.CompareAndSwap(nil, &rerr)
		go func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.failed != nil {
				return // dropped or already offline
			}
			if err := t.rec.rebuildAfterCorruption(context.Background()); err != nil {
				_ = t.goOffline("rebuild after corruption failed: %v", err)
				return
			}
			t.rebuilding.Store(false)
		}()
	}
	return ferr.New(ferr.KvStorageException, "%s in %s: %v", op, t.bucket, err)
}

// rebuildAfterCorruption takes the corrupt table files out of Pebble (rebuilding the other
// open buckets they held, see Store.removeCorruptTables) and rebuilds t. Caller holds t.mu
// (or owns t).
func (rc *recovery) rebuildAfterCorruption(ctx context.Context) error {
	t := rc.t
	if err := t.store.repairAfterCorruption(t); err != nil {
		return err
	}
	return rc.rebuild(ctx)
}

// rebuild replaces the bucket's state with one derived from the whole changelog and checks
// that the bucket can be read in full afterwards. Requests get KV_STORAGE_EXCEPTION meanwhile.
// Caller holds t.mu (or owns t).
func (rc *recovery) rebuild(ctx context.Context) error {
	t := rc.t
	var busy error = ferr.New(ferr.KvStorageException, "the state of bucket %s is being rebuilt from its changelog", t.bucket)
	t.offline.Store(&busy)
	if start := t.log.LogStartOffset(); start > 0 {
		return fmt.Errorf("the changelog starts at offset %d: the batches below it are gone, so the state cannot be rebuilt", start)
	}
	t.log.Retention().SetMinRetainOffset(0) // keep the changelog while the state exists only in memtables
	seq, err := dropBucketSeq(t.store.db, t.bucket)
	if err != nil {
		return err
	}
	t.mem.untracked(seq) // the range deletion is in a memtable
	t.forgetRows()
	if err := rc.replay(ctx, 0); err != nil {
		return err
	}
	if err := t.checkReadable(); err != nil {
		return fmt.Errorf("state still unreadable after the rebuild: %w", err)
	}
	if err := t.store.flushWithin(checkpointFlushWait); err != nil {
		return fmt.Errorf("flush the rebuilt state: %w", err)
	}
	t.store.log.Info("kvstore: bucket state rebuilt from its changelog", "bucket", t.bucket, "applied", t.applied.Load())
	t.offline.Store(nil)
	return nil
}

// checkReadable reads every key and the applied offset of the bucket.
func (t *Tablet) checkReadable() error {
	if _, err := t.readApplied(); err != nil {
		return err
	}
	it, err := t.store.db.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.hi})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		_ = it.Value()
	}
	return errors.Join(it.Error(), it.Close())
}
