package control

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/server/diskwatch"
)

// diskFence makes a tablet server whose disk stalls leave the cluster (docs/cluster.md,
// "Gray failures"). A leader whose fdatasync does not return acknowledges nothing, but it
// keeps its leaderships and its ISR memberships, and its lease stays alive (renewals do not
// touch the disk): every acks=all write of its buckets waits, and so do those of the buckets
// where it is an in-sync follower, until the sync returns — forever on a dead disk.
//
// Invariant: while an fdatasync of a log segment has been in flight for at least bound,
// stalled is true: the membership fence refuses clients (MembershipValid) and the registrar
// gives the registration up (Registrar.Sick), so the coordinator moves the leaderships to
// other ISR members and removes the server from every ISR. stalled turns false once no sync
// has been in flight for more than bound/2 for rejoinAfter, and the server registers again
// and returns as a follower, catching up like a restarted one.
type diskFence struct {
	bound time.Duration // 0: off
	log   *slog.Logger

	stalled atomic.Bool
	kick    chan struct{} // wakes the registrar, capacity 1
}

// rejoinAfter is how long the disk must answer within bound/2 before the server registers
// again, so that a disk that stalls every few seconds does not make it flap.
const rejoinAfter = time.Second

func newDiskFence(bound time.Duration, log *slog.Logger) *diskFence {
	return &diskFence{bound: bound, log: log, kick: make(chan struct{}, 1)}
}

func (d *diskFence) isStalled() bool { return d != nil && d.stalled.Load() }

// run watches diskwatch's syncs in flight until ctx ends.
func (d *diskFence) run(ctx context.Context) {
	if d.bound <= 0 {
		return
	}
	period := min(max(d.bound/10, 20*time.Millisecond), 250*time.Millisecond)
	tick := time.NewTicker(period)
	defer tick.Stop()
	var healthySince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			oldest, inFlight := diskwatch.Oldest(now)
			if !d.stalled.Load() {
				if inFlight && oldest.For >= d.bound {
					d.stalled.Store(true)
					diskwatch.CountStall()
					d.log.Warn("fdatasync stalled beyond log.flush.max-stall-time: this tablet server leaves the cluster until its disk answers (its leaderships move to other in-sync replicas)",
						"file", oldest.Path, "device", diskwatch.Device(oldest.Path), "in_flight", oldest.For.Round(time.Millisecond), "bound", d.bound)
					d.wake()
				}
				continue
			}
			if inFlight && oldest.For > d.bound/2 {
				healthySince = time.Time{}
				continue
			}
			if healthySince.IsZero() {
				healthySince = now
			}
			if now.Sub(healthySince) >= rejoinAfter {
				d.stalled.Store(false)
				healthySince = time.Time{}
				d.log.Info("disk answers again: the tablet server registers again and rejoins as a follower")
				d.wake()
			}
		}
	}
}

func (d *diskFence) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}
