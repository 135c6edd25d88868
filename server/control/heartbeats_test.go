package control

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/control/peers"
	"github.com/stromdb/strom/server/meta"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// answeringAddr returns the address of a wire listener that answers API_VERSIONS: a live
// tablet server's internal listener.
func answeringAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		wire.Serve(ctx, ln, wire.NewService(2), wire.ListenerConfig{Name: "INTERNAL"}, quietLog())
	}()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr().String()
}

// register stores reg under a fresh lease, as a tablet server's registrar does.
func register(t *testing.T, cli *clientv3.Client, members *membership.Members, reg membership.Registration) clientv3.LeaseID {
	t.Helper()
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	val, _ := json.Marshal(reg)
	if _, err := cli.Put(ctx, meta.KeyPrefix+membership.Key(reg.ID), string(val), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if members != nil {
		members.Put(reg.ID, reg)
	}
	return lease.ID
}

// activeElector returns an elector that holds a real fence (an election key in etcd).
func activeElector(t *testing.T, cli *clientv3.Client) *election.Elector {
	t.Helper()
	ctx := context.Background()
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	key := election.Prefix + "test"
	resp, err := cli.Put(ctx, meta.KeyPrefix+key, "{}", clientv3.WithLease(lease.ID))
	if err != nil {
		t.Fatal(err)
	}
	e := election.New(cli, quietLog())
	e.SetActive(meta.Fence{Key: key, Epoch: resp.Header.Revision}, true)
	return e
}

func openStore(t *testing.T) *clientv3.Client {
	t.Helper()
	store, err := meta.OpenEmbedded(context.Background(), t.TempDir(), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store.Client()
}

func exists(t *testing.T, cli *clientv3.Client, key string) bool {
	t.Helper()
	return registered(t, cli, meta.KeyPrefix+key)
}

// TestHeartbeatsFenceOnlySilentServers: the active coordinator fences a tablet server that
// accepts connections but never answers (paused), and revokes its lease only after the
// fence; a server that answers, and one that takes no part (no fence grace), keep theirs.
func TestHeartbeatsFenceOnlySilentServers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli := openStore(t)
	members := membership.NewMembers()
	register(t, cli, members, membership.Registration{ID: 1, Internal: "self:1", FenceGraceMs: 200})
	register(t, cli, members, membership.Registration{ID: 7, Internal: answeringAddr(t), FenceGraceMs: 200})
	register(t, cli, members, membership.Registration{ID: 8, Internal: silentAddr(t), FenceGraceMs: 200})
	register(t, cli, members, membership.Registration{ID: 9, Internal: silentAddr(t)})
	h := &heartbeats{cli: cli, log: quietLog(), elector: activeElector(t, cli), members: members, pool: peers.NewPool(), self: 1,
		interval: 50 * time.Millisecond, fenceAfter: 300 * time.Millisecond}
	defer h.pool.Close()
	go h.run(ctx)

	// Watch server 8's registration and fence: the fence must come first.
	wch := cli.Watch(ctx, meta.KeyPrefix, clientv3.WithPrefix())
	fenced := false
	deadline := time.After(20 * time.Second)
	for done := false; !done; {
		select {
		case <-deadline:
			t.Fatal("the silent server was not failed over")
		case wr := <-wch:
			for _, ev := range wr.Events {
				key := string(ev.Kv.Key)
				switch {
				case key == meta.KeyPrefix+membership.FenceKey(8) && ev.Type == clientv3.EventTypePut:
					fenced = true
				case key == meta.KeyPrefix+membership.Key(8) && ev.Type == clientv3.EventTypeDelete:
					if !fenced {
						t.Fatal("the silent server's registration was revoked before it was fenced")
					}
					done = true
				case key == meta.KeyPrefix+membership.Key(7) || key == meta.KeyPrefix+membership.Key(9) ||
					key == meta.KeyPrefix+membership.FenceKey(7) || key == meta.KeyPrefix+membership.FenceKey(9):
					t.Fatalf("%s changed (%v): only the silent participating server may be fenced", key, ev.Type)
				}
			}
		}
	}
	if exists(t, cli, membership.FenceKey(8)) {
		t.Fatal("the fence outlived the lease it was written under")
	}
	members.Delete(8)
	time.Sleep(10 * h.fenceAfter) // many more rounds
	for _, key := range []string{membership.Key(7), membership.Key(9)} {
		if !exists(t, cli, key) {
			t.Fatalf("%s was revoked", key)
		}
	}
}

// TestHeartbeatsDoNotFenceWithoutAQuorum: a coordinator that hears from too few servers (it
// is the isolated one) and a deposed coordinator (its epoch is gone) fence nobody.
func TestHeartbeatsDoNotFenceWithoutAQuorum(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli := openStore(t)
	members := membership.NewMembers()
	register(t, cli, members, membership.Registration{ID: 7, Internal: silentAddr(t), FenceGraceMs: 200})
	register(t, cli, members, membership.Registration{ID: 8, Internal: silentAddr(t), FenceGraceMs: 200})
	isolated := &heartbeats{cli: cli, log: quietLog(), elector: activeElector(t, cli), members: members, pool: peers.NewPool(), self: -1,
		interval: 50 * time.Millisecond, fenceAfter: 200 * time.Millisecond}
	defer isolated.pool.Close()
	go isolated.run(ctx)

	deposedMembers := membership.NewMembers()
	register(t, cli, deposedMembers, membership.Registration{ID: 1, Internal: "self:1", FenceGraceMs: 200})
	register(t, cli, deposedMembers, membership.Registration{ID: 2, Internal: answeringAddr(t), FenceGraceMs: 200})
	register(t, cli, deposedMembers, membership.Registration{ID: 3, Internal: silentAddr(t), FenceGraceMs: 200})
	deposed := election.New(cli, quietLog())
	deposed.SetActive(meta.Fence{Key: election.Prefix + "gone", Epoch: 1}, true) // an epoch etcd no longer has
	d := &heartbeats{cli: cli, log: quietLog(), elector: deposed, members: deposedMembers, pool: peers.NewPool(), self: 1,
		interval: 50 * time.Millisecond, fenceAfter: 200 * time.Millisecond}
	defer d.pool.Close()
	go d.run(ctx)

	time.Sleep(20 * isolated.fenceAfter)
	for _, id := range []int32{7, 8, 3} {
		if !exists(t, cli, membership.Key(id)) || exists(t, cli, membership.FenceKey(id)) {
			t.Fatalf("server %d was fenced", id)
		}
	}
}

// TestFenceCheck: a read that finds the registration and no fence vouches for the server for
// the grace; a read that finds a fence on the registration's lease ends that at once.
func TestFenceCheck(t *testing.T) {
	ctx := context.Background()
	cli := openStore(t)
	f := &fenceCheck{cli: cli, log: quietLog(), id: 4, interval: 50 * time.Millisecond, grace: time.Hour}
	f.check(ctx)
	if f.valid(time.Now()) {
		t.Fatal("an unregistered server is vouched for")
	}
	lease := register(t, cli, nil, membership.Registration{ID: 4, FenceGraceMs: 200})
	f.check(ctx)
	if !f.valid(time.Now()) || f.isFenced() {
		t.Fatal("a registered server without a fence is not vouched for")
	}
	if f.valid(time.Now().Add(f.grace)) {
		t.Fatal("a read vouches beyond its grace")
	}
	if _, err := cli.Put(ctx, meta.KeyPrefix+membership.FenceKey(4), "{}", clientv3.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	f.check(ctx)
	if f.valid(time.Now()) || !f.isFenced() {
		t.Fatal("a fenced server is still vouched for")
	}
	if _, err := cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	register(t, cli, nil, membership.Registration{ID: 4, FenceGraceMs: 200})
	f.check(ctx)
	if !f.valid(time.Now()) || f.isFenced() {
		t.Fatal("a server registered again after its fence is not vouched for")
	}
	var nilCheck *fenceCheck
	if !nilCheck.valid(time.Now()) || nilCheck.isFenced() {
		t.Fatal("a server without fence checks is not valid")
	}
}
