package control

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/meta"
)

// deadAddr returns an address on which nothing listens any more: dials are refused.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silentAddr returns the address of a listener whose connections are accepted by the kernel
// and never answered: a paused process.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

func registered(t *testing.T, cli *clientv3.Client, key string) bool {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Kvs) == 1
}

// TestLivenessProbeRevokesOnlyRefusingServers: the active coordinator's probe revokes the
// registration lease of a tablet server whose port refuses connections, and leaves alone
// one whose port accepts them without answering (paused, busy: the lease decides).
func TestLivenessProbeRevokesOnlyRefusingServers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	members := membership.NewMembers()
	regs := map[int32]membership.Registration{7: {ID: 7, Internal: deadAddr(t)}, 8: {ID: 8, Internal: silentAddr(t)}}
	for id, reg := range regs {
		lease, err := cli.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		val, _ := json.Marshal(reg)
		if _, err := cli.Put(ctx, meta.KeyPrefix+membership.Key(id), string(val), clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
		members.Put(id, reg)
	}
	p := &livenessProbe{cli: cli, log: slog.New(slog.NewTextHandler(io.Discard, nil)), interval: 50 * time.Millisecond,
		active: func() bool { return true }, members: members, self: -1, coordinator: "self:1"}
	go p.run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for registered(t, cli, meta.KeyPrefix+membership.Key(7)) {
		if time.Now().After(deadline) {
			t.Fatal("the registration of a server refusing connections was not revoked")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(10 * p.interval) // many more rounds
	if !registered(t, cli, meta.KeyPrefix+membership.Key(8)) {
		t.Fatal("the registration of a server that accepts connections was revoked")
	}
}

// TestLivenessProbeOfTheActiveCoordinator: a standby revokes the election lease of an active
// coordinator whose internal listener refuses connections; a standby never revokes its own
// campaign, and an inactive probe revokes no tablet server.
func TestLivenessProbeOfTheActiveCoordinator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	campaign := func(internal string) string {
		lease, err := cli.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s%s%x", meta.KeyPrefix, election.Prefix, int64(lease.ID))
		val, _ := json.Marshal(election.CoordinatorInfo{Internal: internal})
		if _, err := cli.Put(ctx, key, string(val), clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
		return key
	}
	dead := deadAddr(t)
	active := campaign(dead)
	own := campaign("self:1")
	members := membership.NewMembers()
	tablet := membership.Registration{ID: 3, Internal: deadAddr(t)}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	val, _ := json.Marshal(tablet)
	if _, err := cli.Put(ctx, meta.KeyPrefix+membership.Key(3), string(val), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	members.Put(3, tablet)
	p := &livenessProbe{cli: cli, log: slog.New(slog.NewTextHandler(io.Discard, nil)), interval: 50 * time.Millisecond,
		active: func() bool { return false }, members: members, self: -1, coordinator: "self:1"}
	go p.run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for registered(t, cli, active) {
		if time.Now().After(deadline) {
			t.Fatal("the election key of a coordinator refusing connections was not revoked")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(10 * p.interval)
	if !registered(t, cli, own) {
		t.Fatal("the standby revoked its own campaign")
	}
	if !registered(t, cli, meta.KeyPrefix+membership.Key(3)) {
		t.Fatal("a probe of a node that is not the active coordinator revoked a tablet server")
	}
}
