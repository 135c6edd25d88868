package kvstore

import "context"

// Pending is a staged write between the pipeline's first step and its answer (pipeline.go):
// its changelog is in the log, its rows in the pre-write buffer, and Wait is the second and
// third steps — the wait for durability and the apply to Pebble. PutStaged and
// InsertMissingStaged return one; the zero Pending has nothing to wait for.
//
// Invariant: a write is acknowledged only after Wait returned nil for it; until then a
// lookup may not see it, and a crash or a lost leadership may take it back.
type Pending struct {
	t   *Tablet
	end int64 // the log end offset after the write's changelog batch
	// logDurable waits for the local fsync of the changelog (logstore.Log.AppendStaged).
	logDurable func() error
	// replicated: the log's HW is set by the replica manager, so the write is durable only
	// once the HW passes end under the leadership it was staged in (term, fence).
	replicated bool
	term       int64
	fence      <-chan struct{}
}

// pending returns the Pending of a write whose changelog batch ends at end. Caller holds mu
// (term and fence are those of the leadership the write is staged under).
func (pl *pipeline) pending(end int64, logDurable func() error) Pending {
	t := pl.t
	p := Pending{t: t, end: end, logDurable: logDurable}
	if t.log.ExternalHighWatermark() {
		p.replicated, p.term, p.fence = true, t.term.Load(), t.fence
	}
	return p
}

// Wait blocks until the write is durable and applied to Pebble; only then may it be
// acknowledged. Standalone, durable means the local fsync (shared with concurrent waiters:
// group commit). Replicated, it also means the HW passed the write's changelog while the
// tablet still led under the term it was staged in; it fails with NOT_LEADER_OR_FOLLOWER when
// the leadership ended first (the batch may be truncated away or committed by the next
// leader; the client retries and idempotence sorts it out).
//
// ctx bounds the wait, not the write: when ctx ends first, Wait returns context.Cause(ctx)
// while the write goes on to be applied (or failed) in the background. A ctx that can never
// end (context.Background) waits inline, with no goroutine.
func (p Pending) Wait(ctx context.Context) error {
	if p.t == nil {
		return nil
	}
	if ctx.Done() == nil {
		return p.complete()
	}
	done := make(chan error, 1)
	go func() { done <- p.complete() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// complete runs the durability step to its end: the fsync, for a replicated log the HW,
// then the apply. A failed fsync fails the tablet (failAfterAppend): its state no longer
// matches the log until it is reopened.
func (p Pending) complete() error {
	t := p.t
	if err := p.logDurable(); err != nil {
		return t.pipe.failAfterAppend(err)
	}
	if !p.replicated {
		return t.pipe.applyDurable(p.end)
	}
	if err := t.waitCommitted(p.end, p.fence); err != nil {
		return err
	}
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	if t.term.Load() != p.term {
		return errNotLeader(t.bucket)
	}
	return t.pipe.applyDurableLocked(p.end)
}
