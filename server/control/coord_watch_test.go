package control

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/peers"
	"github.com/stromdb/strom/server/internalconn"
	"github.com/stromdb/strom/server/meta"
)

// campaigner is one coordinator of a test election: a real campaign under a session lease
// much longer than the test's bounds, so only a deposition can move the election on in time.
type campaigner struct {
	el   *election.Elector
	info election.CoordinatorInfo
}

const testCoordTTL = 30 * time.Second

func campaign(t *testing.T, ctx context.Context, cli *clientv3.Client, internal string, tablet *int32) *campaigner {
	t.Helper()
	c := &campaigner{el: election.New(cli, quietLog()), info: election.CoordinatorInfo{Internal: internal, TabletServer: tablet}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		c.el.Campaign(ctx, c.info, testCoordTTL, func(context.Context) error { return nil }, nil)
	}()
	go func() { // the follower's part: re-read the election as its watch would
		defer wg.Done()
		for ctx.Err() == nil {
			c.el.Refresh(ctx)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(wg.Wait)
	return c
}

func waitFor(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", bound, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func standbyBeats(cli *clientv3.Client, c *campaigner, pool *peers.Pool) *heartbeats {
	return &heartbeats{cli: cli, log: quietLog(), elector: c.el, members: membership.NewMembers(), pool: pool, self: -1,
		interval: 50 * time.Millisecond, fenceAfter: 300 * time.Millisecond, selfInternal: c.info.Internal, standbys: true}
}

// TestStandbysDeposeASilentCoordinator: an active coordinator that accepts connections but
// answers nothing (paused) loses its election lease to its two standbys long before the
// lease could expire, and one of them becomes active; the deposed coordinator's fence is
// gone, so its writes fail.
func TestStandbysDeposeASilentCoordinator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli := openStore(t)
	a := campaign(t, ctx, cli, silentAddr(t), nil)
	waitFor(t, "the first coordinator is active", 10*time.Second, a.el.Active)
	fence, _ := a.el.Fence()
	b := campaign(t, ctx, cli, answeringAddr(t), nil)
	c := campaign(t, ctx, cli, answeringAddr(t), nil)
	waitFor(t, "both standbys campaign", 10*time.Second, func() bool { return b.el.SessionLease() != 0 && c.el.SessionLease() != 0 })
	for _, s := range []*campaigner{b, c} {
		h := standbyBeats(cli, s, peers.NewPool())
		defer h.pool.Close()
		go h.run(ctx)
	}
	waitFor(t, "a standby takes over", testCoordTTL/3, func() bool { return b.el.Active() || c.el.Active() })
	resp, err := cli.Get(ctx, meta.KeyPrefix+fence.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatal("the deposed coordinator's election key is still there")
	}
	if err := (election.New(cli, quietLog())).FencedPut(ctx, "x", nil, false); err == nil {
		t.Fatal("a fenced write without a fence succeeded")
	}
	deposed := election.New(cli, quietLog())
	deposed.SetActive(fence, true) // the deposed coordinator, resumed, before it noticed
	if err := deposed.FencedPut(ctx, "databases/x", []byte("{}"), false); err == nil {
		t.Fatal("the deposed coordinator's fenced write succeeded")
	}
}

// TestOneStandbyDoesNotDepose: a standby whose own link to the active coordinator is cut
// (an asymmetric partition: its beats go to a silent address) while the other standby hears
// the coordinator records its suspicion but is outvoted: nobody is deposed.
func TestOneStandbyDoesNotDepose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli := openStore(t)
	a := campaign(t, ctx, cli, answeringAddr(t), nil)
	waitFor(t, "the first coordinator is active", 10*time.Second, a.el.Active)
	b := campaign(t, ctx, cli, answeringAddr(t), nil)
	c := campaign(t, ctx, cli, answeringAddr(t), nil)
	waitFor(t, "both standbys campaign", 10*time.Second, func() bool { return b.el.SessionLease() != 0 && c.el.SessionLease() != 0 })
	cut := silentAddr(t)
	plain := (*internalconn.Dialer)(nil).Func()
	hb := standbyBeats(cli, b, peers.NewPoolDialing(func(ctx context.Context, _, software string) (*wire.ClientConn, error) {
		return plain(ctx, cut, software)
	}))
	defer hb.pool.Close()
	go hb.run(ctx)
	hc := standbyBeats(cli, c, peers.NewPool())
	defer hc.pool.Close()
	go hc.run(ctx)
	waitFor(t, "the cut-off standby records its suspicion", 10*time.Second, func() bool {
		return registered(t, cli, suspectKey(b.el.SessionLease()))
	})
	time.Sleep(10 * hb.fenceAfter)
	if !a.el.Active() || b.el.Active() || c.el.Active() {
		t.Fatal("one standby's view deposed the coordinator")
	}
	if registered(t, cli, suspectKey(c.el.SessionLease())) {
		t.Fatal("the standby that hears the coordinator suspects it")
	}
}

// TestInheritSilenceOfCoordinatorsTabletServer: a standby that becomes the active
// coordinator gives the tablet server of its predecessor's process the silence it observed,
// not a fresh budget; an old observation, or another server, gets a fresh one.
func TestInheritSilenceOfCoordinatorsTabletServer(t *testing.T) {
	members := membership.NewMembers()
	members.Put(5, membership.Registration{ID: 5, Internal: "a:1", FenceGraceMs: 200})
	five := int32(5)
	now := time.Now()
	h := &heartbeats{log: quietLog(), members: members, self: 1, fenceAfter: 300 * time.Millisecond, answered: map[int32]time.Time{}}
	h.coord = coordWatch{target: election.LeaderKey{Rev: 3, Lease: 9}, addr: "a:2", tablet: &five, answered: now.Add(-time.Second), ticked: now}
	h.inherit(context.Background(), now)
	if got := h.answered[5]; !got.Equal(now.Add(-time.Second)) {
		t.Fatalf("inherited %v, want the observed %v", got, now.Add(-time.Second))
	}
	if h.coord.addr != "" {
		t.Fatal("the observation was not consumed")
	}
	h.answered = map[int32]time.Time{}
	h.coord = coordWatch{target: election.LeaderKey{Rev: 3, Lease: 9}, addr: "a:2", tablet: &five, answered: now.Add(-time.Second), ticked: now.Add(-time.Second)}
	h.inherit(context.Background(), now)
	if _, ok := h.answered[5]; ok {
		t.Fatal("an observation older than 2*fenceAfter was inherited")
	}
}
