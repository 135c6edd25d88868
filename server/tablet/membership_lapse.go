package tablet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/ferr"
)

// membershipLapse ends the acks=all waits of a leader whose membership lapsed
// (Options.MembershipValid turned false: it was cut from the etcd majority for most of its
// lease, or its disk stalled; docs/cluster.md, "Failover in under 2 s").
//
// Such a leader refuses new requests (membershipCurrent), but writes already waiting for
// their high watermark used to wait out the client's request timeout (30 s by default), and
// only then would the client refresh its metadata and find the new leader: most of a cut-off
// leader's unavailability in the partition suite. Now they end with NOT_LEADER_OR_FOLLOWER
// as soon as the lapse is seen, as when the leadership ends; the write may still be
// committed by the next leader, and the client's retry is deduplicated by its writer id.
//
// Invariant: the context in cur is cancelled (with that error as its cause) exactly while
// the last check found the membership invalid; a check that finds it valid again installs a
// new, live context. Waits take the context current when they start, so a wait that starts
// after a lapse ends at once (after checking its write did not commit meanwhile).
type membershipLapse struct {
	cur atomic.Pointer[lapseCtx]
}

type lapseCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// current returns the context a wait starting now ends with; nil on a server without a
// membership fence (the single node, tests).
func (m *membershipLapse) current() context.Context {
	if m == nil {
		return nil
	}
	if c := m.cur.Load(); c != nil {
		return c.ctx
	}
	return nil
}

// membershipCheckInterval is how often the background loop compares the membership: how
// late, at most, a waiting write learns of a lapse.
const membershipCheckInterval = 50 * time.Millisecond

// errMembershipLapsed is the cause of a lapse context.
var errMembershipLapsed = ferr.New(ferr.NotLeaderOrFollower,
	"this tablet server could not renew its membership in time and may no longer lead the bucket; the write may still commit at the new leader")

// check compares the membership (valid; nil: no fence) with the last check; the tablet
// server's background loop calls it every membershipCheckInterval.
func (m *membershipLapse) check(valid func() bool) {
	if valid == nil {
		return
	}
	ok := valid()
	c := m.cur.Load()
	lapsed := c != nil && c.ctx.Err() != nil
	switch {
	case c == nil || ok && lapsed:
		ctx, cancel := context.WithCancelCause(context.Background())
		m.cur.Store(&lapseCtx{ctx: ctx, cancel: cancel})
		if !ok {
			cancel(errMembershipLapsed)
		}
	case !ok && !lapsed:
		c.cancel(errMembershipLapsed)
	}
}

// done is the Done channel of the current lapse context (nil: never).
func (m *membershipLapse) done() <-chan struct{} {
	if ctx := m.current(); ctx != nil {
		return ctx.Done()
	}
	return nil
}

// with returns ctx, also cancelled with errMembershipLapsed when the membership lapses.
func (m *membershipLapse) with(ctx context.Context) (context.Context, func()) {
	lapse := m.current()
	if lapse == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lapse, func() { cancel(context.Cause(lapse)) })
	return ctx, func() { stop(); cancel(nil) }
}
