package control

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/server/control/election"
	"github.com/stromdb/strom/server/control/membership"
	"github.com/stromdb/strom/server/meta"
)

// livenessProbe is the fast detection of dead processes: the active coordinator's of dead
// tablet servers, and a standby coordinator's of a dead active coordinator
// (docs/cluster.md, "Failover in under 2 s"). Every interval it dials each live tablet
// server's internal listener. A server whose listener refuses the connection
// (ECONNREFUSED) refusalsToAct times in a row has no process behind its port: it was killed
// or crashed. The coordinator then revokes the server's registration lease, and the
// membership watch fails its leaderships over at once, instead of after the up to
// tablet-server.lease-ttl etcd takes to expire the lease of a killed process.
//
// Invariant: only a refusal is acted on. A dial that times out or succeeds — a paused
// process (the kernel still accepts its connections), a partition, a slow or busy server,
// a GC pause — changes nothing; those are left to the lease and its fence (leaseClock), so
// the probe never fails over a server that could still be serving. The lease revoked is the
// one of the registration read after the refusals, and a last probe after that read must be
// refused too, so a server that restarted meanwhile (and listens again) is not revoked.
//
// A standby coordinator does the same for the active coordinator: the oldest election key
// names the active coordinator's internal listener and, in its name, its session lease; a
// standby that finds that listener refusing twice revokes the lease, and the election moves
// on at once instead of after coordinator.lease-ttl (a process killed with its coordinator,
// tablet server and etcd member costs both leases otherwise).
type livenessProbe struct {
	cli      *clientv3.Client
	log      *slog.Logger
	interval time.Duration
	active   func() bool         // whether this node is the active coordinator
	members  *membership.Members // the live tablet servers
	self     int32               // this node's tablet-server.id; -1 without the tablet role
	// coordinator is this node's coordinator internal address (its own election key names
	// it: never probed).
	coordinator string

	mu       sync.Mutex
	refusals map[int32]int // consecutive refusals per server

	coordRefusals int // consecutive refusals of the active coordinator (run's goroutine only)
}

// refusalsToAct is how many consecutive refused dials make a server dead: one refusal
// could be a listener being re-created; two, interval apart, are not.
const refusalsToAct = 2

func (p *livenessProbe) run(ctx context.Context) {
	if p.interval <= 0 {
		return
	}
	p.refusals = map[int32]int{}
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !p.active() {
			p.mu.Lock()
			clear(p.refusals)
			p.mu.Unlock()
			p.probeCoordinator(ctx)
			continue
		}
		p.coordRefusals = 0
		var wg sync.WaitGroup
		for _, id := range p.members.IDs() {
			if id == p.self {
				continue // this process is alive: it is running this probe
			}
			addr, ok := p.members.InternalAddr(id)
			if !ok {
				continue
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.probe(ctx, id, addr) }()
		}
		wg.Wait()
	}
}

// refused reports whether dialing addr was refused (no listener on the port).
func refused(ctx context.Context, addr string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func (p *livenessProbe) probe(ctx context.Context, id int32, addr string) {
	if !refused(ctx, addr, p.interval) {
		p.mu.Lock()
		delete(p.refusals, id)
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	p.refusals[id]++
	n := p.refusals[id]
	p.mu.Unlock()
	if n < refusalsToAct {
		return
	}
	key := meta.KeyPrefix + membership.Key(id)
	rctx, cancel := context.WithTimeout(ctx, p.interval*5)
	defer cancel()
	resp, err := p.cli.Get(rctx, key)
	if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
		return // gone already, or etcd did not answer: the lease decides
	}
	reg, err := membership.Decode(resp.Kvs[0].Value)
	if err != nil || reg.Internal != addr || !refused(rctx, addr, p.interval) {
		return // re-registered elsewhere, or listening again
	}
	lease := resp.Kvs[0].Lease
	if _, err := p.cli.Revoke(rctx, clientv3.LeaseID(lease)); err != nil {
		p.log.Warn("liveness probe: cannot revoke the registration of a dead tablet server; its lease will expire", "id", id, "err", err)
		return
	}
	p.mu.Lock()
	delete(p.refusals, id)
	p.mu.Unlock()
	p.log.Warn("liveness probe: tablet server refuses connections (its process is gone); registration revoked, its leaderships fail over now",
		"id", id, "internal", addr, "refusals", n)
}

// probeCoordinator is a standby's probe of the active coordinator.
func (p *livenessProbe) probeCoordinator(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, p.interval*5)
	defer cancel()
	first := func() (string, clientv3.LeaseID, bool) {
		resp, err := p.cli.Get(rctx, meta.KeyPrefix+election.Prefix, clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
		if err != nil || len(resp.Kvs) == 0 || resp.Kvs[0].Lease == 0 {
			return "", 0, false
		}
		var info election.CoordinatorInfo
		if json.Unmarshal(resp.Kvs[0].Value, &info) != nil || info.Internal == "" || info.Internal == p.coordinator {
			return "", 0, false // unreadable, or this node's own campaign
		}
		return info.Internal, clientv3.LeaseID(resp.Kvs[0].Lease), true
	}
	addr, lease, ok := first()
	if !ok || !refused(rctx, addr, p.interval) {
		p.coordRefusals = 0
		return
	}
	p.coordRefusals++
	if p.coordRefusals < refusalsToAct {
		return
	}
	p.coordRefusals = 0
	if again, l, ok := first(); !ok || again != addr || l != lease {
		return
	}
	if _, err := p.cli.Revoke(rctx, lease); err != nil {
		p.log.Warn("liveness probe: cannot revoke the election lease of a dead coordinator; it will expire", "internal", addr, "err", err)
		return
	}
	p.log.Warn("liveness probe: the active coordinator refuses connections (its process is gone); its election lease revoked", "internal", addr)
}
