package kvstore

import (
	"context"
	"fmt"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
)

// role is the tablet's part in a replicated bucket (see doc.go, "Replication").
type role uint8

const (
	// roleStandalone is the single-node default: the tablet accepts writes and applies them
	// as their changelog becomes durable.
	roleStandalone role = iota
	// roleLeader accepts writes; in replicated mode (logstore.Options.ExternalHighWatermark)
	// a write is acknowledged once the HW passes its changelog.
	roleLeader
	// roleFollower refuses writes (NOT_LEADER_OR_FOLLOWER); CatchUp applies the committed
	// changelog the fetcher appended.
	roleFollower
)

func errNotLeader(b cluster.Bucket) error {
	return ferr.New(ferr.NotLeaderOrFollower, "this replica of %s is not the leader", b)
}

// IsFollower reports whether the tablet is a follower (BecomeFollower was called last).
func (t *Tablet) IsFollower() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.role == roleFollower
}

// waitCommitted blocks until the log's high watermark reaches end, the fence closes
// (BecomeFollower) or the log is closed.
func (t *Tablet) waitCommitted(end int64, fence <-chan struct{}) error {
	if t.log.HighWatermark() >= end {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-fence:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := t.log.Wait(ctx, end-1); err != nil {
		select {
		case <-fence:
			return errNotLeader(t.bucket)
		default:
			return err
		}
	}
	return nil
}

// CatchUp applies the changelog from the applied offset up to the log's high watermark to
// Pebble (the replay recovery uses), so a follower's state follows the committed changelog
// as the fetcher appends it and the HW advances. It refuses on a leader, whose writes are
// applied through the pipeline.
func (t *Tablet) CatchUp(ctx context.Context) error {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	if err := t.offlineError(); err != nil {
		return err
	}
	if t.role == roleLeader || len(t.queue) > 0 {
		return fmt.Errorf("kvstore: CatchUp on %s, which is leading: its writes are applied by the pipeline", t.bucket)
	}
	return t.rec.catchUpLocked(ctx)
}

// catchUpLocked replays the committed changelog. Caller holds applyMu and mu.
func (rc *recovery) catchUpLocked(ctx context.Context) error {
	t := rc.t
	applied, err := rc.replayRange(ctx, t.applied.Load(), t.log.HighWatermark())
	t.applied.Store(applied)
	if err != nil {
		return fmt.Errorf("kvstore: catch up %s: %w", t.bucket, err)
	}
	return nil
}

// BecomeLeader makes the tablet accept writes after it followed (or after open). It catches
// Pebble up to the high watermark, then stages every changelog batch between the HW and the
// log end — written under an earlier leader and not yet committed — into the pre-write
// buffer and the apply queue, as if this tablet had just written them: new writes merge
// against them, and they reach Pebble when the HW passes them (a write's waiter, or
// ApplyCommitted). Call it after the log's AssignEpoch for the new epoch. Calling it on a
// leader does nothing.
func (t *Tablet) BecomeLeader(ctx context.Context) error {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	if err := t.offlineError(); err != nil {
		return err
	}
	if t.role == roleLeader {
		return nil
	}
	if err := t.rec.catchUpLocked(ctx); err != nil {
		return err
	}
	if err := t.rec.stageTail(t.applied.Load(), t.log.LogEndOffset()); err != nil {
		t.queue = nil
		return fmt.Errorf("kvstore: become leader of %s: %w", t.bucket, err)
	}
	t.role = roleLeader
	return nil
}

// stageTail turns the changelog batches in [from, end) into staged batches. Caller holds
// applyMu and mu, and the queue is empty.
func (rc *recovery) stageTail(from, end int64) error {
	t := rc.t
	var buf []byte
	for off := from; off < end; {
		res, err := t.log.Replica().ReadReplica(off, replayReadBytes, true)
		if err != nil {
			return fmt.Errorf("read changelog at %d: %w", off, err)
		}
		buf, err = res.AppendTo(buf[:0])
		res.Release()
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return fmt.Errorf("changelog ends at %d, before the log end %d", off, end)
		}
		for lb, err := range record.Iterate(buf) {
			if err != nil {
				return fmt.Errorf("changelog at %d: %w", off, err)
			}
			if lb.NextOffset() <= off {
				continue
			}
			sb := &stagedBatch{writes: make(map[string][]byte)}
			if err := rc.replayBatch(lb, rc.changeApplier(&stateBatch{sb: sb})); err != nil {
				return fmt.Errorf("batch at %d: %w", lb.BaseOffset(), err)
			}
			sb.end = lb.NextOffset()
			t.queue = append(t.queue, sb)
			off = sb.end
		}
	}
	return nil
}

// BecomeFollower stops the tablet from accepting writes (NOT_LEADER_OR_FOLLOWER), fails the
// waiters of every staged write with that error, and drops the pre-write buffer and the
// apply queue: their changelog lies above the HW and may be truncated away. Pebble is kept:
// it holds only committed state. From now on CatchUp applies what the fetcher brings.
func (t *Tablet) BecomeFollower() {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.role = roleFollower
	t.term.Add(1)
	close(t.fence)
	t.fence = make(chan struct{})
	t.queue = nil
}

// ApplyCommitted applies every staged batch the high watermark has passed. A leader's
// replica manager calls it when it advances the HW, so that batches nobody waits for (the
// tail staged by BecomeLeader) reach Pebble too.
func (t *Tablet) ApplyCommitted() error {
	hw := t.log.HighWatermark()
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	end := int64(-1)
	for _, sb := range t.queue {
		if sb.end > hw {
			break
		}
		end = sb.end
	}
	t.mu.Unlock()
	if end < 0 {
		return nil
	}
	return t.pipe.applyDurableLocked(end)
}

// TruncateLog truncates the changelog (logstore.Replica.TruncateTo) on a follower, excluding
// CatchUp meanwhile. The log refuses to cut below the applied offset, so Pebble never holds
// state whose changelog is gone.
func (t *Tablet) TruncateLog(offset int64) error {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.role != roleFollower {
		return fmt.Errorf("kvstore: truncating the changelog of %s needs BecomeFollower first", t.bucket)
	}
	return t.log.Replica().TruncateTo(offset)
}
