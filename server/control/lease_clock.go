package control

import (
	"sync/atomic"
	"time"
)

// leaseClock tracks until when this tablet server's registration lease is certainly alive in
// etcd, by its own clock.
//
// Invariant: validUntil is the send time of the last grant or renewal that etcd answered, plus
// leaseSafety of the TTL it answered. etcd expires a lease no earlier than a TTL after it
// received the last renewal (and renews every lease when its own leader changes), which is
// after the renewal was sent; the active coordinator moves a server's leaderships away only
// once its registration is gone. So until validUntil no other server has been made leader of
// a bucket this server leads through failover — its reads are not stale and its acks=1
// writes are not on a deposed leader. Past it, the server may have been replaced without
// hearing of it (cut from the etcd majority, but not from its clients).
type leaseClock struct {
	validUntil atomic.Int64 // UnixNano; 0 before the first grant
}

// leaseSafety is the share of the TTL trusted: the rest covers clock-rate differences
// between this process and the etcd leader.
const leaseSafety = 0.9

// renewed records that etcd answered a grant or renewal sent at sent with a TTL of ttl.
func (l *leaseClock) renewed(sent time.Time, ttl time.Duration) {
	until := sent.Add(time.Duration(float64(ttl) * leaseSafety)).UnixNano()
	for {
		old := l.validUntil.Load()
		if until <= old || l.validUntil.CompareAndSwap(old, until) {
			return
		}
	}
}

// gaveUp records that the registration was given up (revoked): nothing is vouched for until
// the next grant.
func (l *leaseClock) gaveUp() { l.validUntil.Store(0) }

// valid reports whether the lease is certainly alive now.
func (l *leaseClock) valid(now time.Time) bool { return now.UnixNano() < l.validUntil.Load() }

// MembershipValid reports whether this tablet server's registration lease is certainly alive
// in etcd (see leaseClock): while it is, no other server can have taken over its leaderships
// by failover. A leader serves reads and acknowledges writes only while it holds.
//
// A server whose disk stalls (diskFence) is not valid from the moment the stall is seen, and
// one whose fence reads (fenceCheck) stopped vouching for it is not valid either: the active
// coordinator may be about to fail it over.
func (c *Control) MembershipValid() bool {
	now := time.Now()
	return c.lease.valid(now) && !c.disk.isStalled() && c.fcheck.valid(now)
}
