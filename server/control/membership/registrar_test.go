package membership

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

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
