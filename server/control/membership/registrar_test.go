package membership

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/meta"
)

// TestRenewLeaseKeepsALiveLease checks the two answers Keep acts on: a lease etcd
// still holds is renewed (no moment without a registration), and a lease etcd no longer has
// is reported expired at once.
func TestRenewLeaseKeepsALiveLease(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	r := &Registrar{Client: cli, TTL: 2 * time.Second, Log: testLog()}
	lease, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.renew(ctx, lease.ID); err != nil {
		t.Fatalf("a lease etcd still holds was not renewed: %v", err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.renew(ctx, lease.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("a revoked lease: %v, want lease not found", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("giving up an expired lease took %v: etcd's answer was not taken as final", took)
	}
}

// TestRegistrarReportsEveryAnsweredGrantAndRenewal checks what the tablet server's
// membership fence reads: Register and each answered renewal report when the request was sent
// and the TTL etcd granted; a renewal etcd refused reports nothing.
func TestRegistrarReportsEveryAnsweredGrantAndRenewal(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	type report struct {
		sent time.Time
		ttl  time.Duration
	}
	var reports []report
	r := &Registrar{Client: store.Client(), Reg: Registration{ID: 7, Internal: "x:1"}, TTL: 2 * time.Second, Log: testLog(),
		Renewed: func(sent time.Time, ttl time.Duration) { reports = append(reports, report{sent, ttl}) }}
	before := time.Now()
	lease, err := r.Register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].ttl != 2*time.Second || reports[0].sent.Before(before) {
		t.Fatalf("after Register: reports %v, want one of TTL 2s sent after %v", reports, before)
	}
	if err := r.renew(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || reports[1].sent.Before(reports[0].sent) || reports[1].ttl <= 0 {
		t.Fatalf("after a renewal: reports %v, want a second, later one", reports)
	}
	if _, err := store.Client().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := r.renew(ctx, lease); err == nil {
		t.Fatal("a revoked lease was renewed")
	}
	if len(reports) != 2 {
		t.Fatalf("a refused renewal was reported: %v", reports)
	}
}

// TestSickServerLeavesAndReturns: while Sick reports true, Keep gives the registration up at
// once (Left first, then the key is gone without waiting for the TTL) and does not renew it;
// once Sick reports false it registers again under a new lease, and reports the grant to
// Renewed only after CaughtUp returned for the registration's revision (a CaughtUp that
// fails withdraws that registration and Keep tries again).
func TestSickServerLeavesAndReturns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	var sick, left, behind atomic.Bool
	var caughtUp atomic.Int64
	var renewals, renewalsAfterCatchUp atomic.Int32
	kick := make(chan struct{}, 1)
	r := &Registrar{Client: cli, Reg: Registration{ID: 9, Internal: "x:1"}, TTL: 3 * time.Second, Log: testLog(),
		Sick: sick.Load, Kick: kick, Left: func() { left.Store(true) },
		CaughtUp: func(ctx context.Context, rev int64) error {
			if behind.CompareAndSwap(true, false) {
				return errors.New("still behind")
			}
			caughtUp.Store(rev)
			return nil
		},
		Renewed: func(time.Time, time.Duration) {
			renewals.Add(1)
			if caughtUp.Load() > 0 {
				renewalsAfterCatchUp.Add(1)
			}
		}}
	lease, err := r.Register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.Keep(ctx, lease) }()
	key := meta.KeyPrefix + Key(9)
	registered := func() bool {
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Kvs) == 1
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not %s after 10 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sick.Store(true)
	kick <- struct{}{}
	waitFor("unregistered", func() bool { return !registered() })
	if !left.Load() {
		t.Fatal("the registration was revoked before Left was told")
	}
	if ttl, err := cli.TimeToLive(ctx, lease); err == nil && ttl.TTL > 0 {
		t.Fatalf("the old lease still lives (TTL %d): it was not revoked", ttl.TTL)
	}
	behind.Store(true)
	before := renewals.Load()
	sick.Store(false)
	kick <- struct{}{}
	waitFor("registered again", func() bool { return caughtUp.Load() > 0 && registered() })
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Kvs[0].CreateRevision; caughtUp.Load() < got {
		t.Fatalf("CaughtUp waited for revision %d, the registration was written at %d", caughtUp.Load(), got)
	}
	waitFor("a renewal reported", func() bool { return renewalsAfterCatchUp.Load() > 0 })
	if n := renewals.Load() - before; n != renewalsAfterCatchUp.Load() {
		t.Fatalf("%d grants or renewals reported after the server returned, %d of them after CaughtUp: the fence vouched for a view that was behind", n, renewalsAfterCatchUp.Load())
	}
	cancel()
	<-done
	if registered() {
		t.Fatal("the registration outlived Keep's context")
	}
}

// TestReregistrationKeepsItsLeaseWhileCatchingUp: a server whose watch needs longer than a
// lease TTL to catch up after registering again keeps that one registration alive meanwhile
// (renewed, not reported to Renewed), instead of giving it up and starting over.
func TestReregistrationKeepsItsLeaseWhileCatchingUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	ttl := 2 * time.Second
	ready := time.Now().Add(ttl + ttl/2) // caught up only after one and a half TTLs
	var waits, renewed atomic.Int32
	var waitedFor atomic.Int64
	r := &Registrar{Client: cli, Reg: Registration{ID: 4, Internal: "x:1"}, TTL: ttl, Log: testLog(),
		CaughtUp: func(ctx context.Context, rev int64) error {
			waits.Add(1)
			waitedFor.Store(rev)
			select {
			case <-ctx.Done():
				if time.Now().After(ready) {
					return nil
				}
				return ctx.Err()
			case <-time.After(time.Until(ready)):
				return nil
			}
		},
		Renewed: func(time.Time, time.Duration) { renewed.Add(1) }}
	lease, err := r.registerOnce(ctx, false, true)
	if err != nil {
		t.Fatalf("registering again while the watch catches up for 1.5 TTLs: %v", err)
	}
	if waits.Load() < 2 {
		t.Fatalf("CaughtUp was called %d times: the wait was not split around renewals", waits.Load())
	}
	if renewed.Load() != 1 {
		t.Fatalf("%d grants or renewals reported, want 1 (the one after catching up)", renewed.Load())
	}
	resp, err := cli.Get(ctx, meta.KeyPrefix+Key(4))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) != lease || resp.Kvs[0].CreateRevision != waitedFor.Load() {
		t.Fatalf("registration %v, want one under lease %x written at revision %d", resp.Kvs, lease, waitedFor.Load())
	}
	if live, err := cli.TimeToLive(ctx, lease); err != nil || live.TTL <= 0 {
		t.Fatalf("the registration's lease is gone after the catch-up (TTL %v, err %v)", live, err)
	}
}
