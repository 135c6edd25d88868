package cluster_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stromdb/strom/tests/history"
	"github.com/stromdb/strom/tests/netns"
)

// partitionRun is one TestNetworkPartitions: the cluster, its clients and the faults so far.
type partitionRun struct {
	t       *testing.T
	c       *netns.Cluster
	nw      *netns.Net
	rng     *rand.Rand
	ctl     *netns.Host   // never cut: setup, metadata and the final read run here
	clients []*netns.Host // one workload worker each
	workers []*netns.Worker
	base    netns.WorkerConfig
	done    []faultRecord
	onHeal  []func() // what the current fault undoes at the heal besides its cuts
}

type faultRecord struct {
	name                   string
	start, heal, recovered time.Time
}

// faultKind cuts links of the cluster (given who leads now) and returns a description; the
// run heals every cut after the hold. hold is passed for faults that change over time.
type faultKind struct {
	name string
	cut  func(r *partitionRun, m netns.Meta, hold time.Duration) string
}

// faultKinds are the scenarios of issue 27. L is the leader of bucket 0 of the log table.
var faultKinds = []faultKind{
	{"leader-isolated-from-etcd-majority", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		// L loses the other nodes — etcd peers, replication, coordinator — but its clients
		// still reach it: it must stop acknowledging once its ISR is gone, and lose nothing.
		l := r.leader(m)
		for _, o := range r.others(l) {
			r.nw.CutBoth(l.Host, o.Host)
		}
		return fmt.Sprintf("node %d (leader) cut from the other nodes, clients reach all", l.ID)
	}},
	{"leader-etcd-peer-traffic-cut", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		// Only L's etcd member loses the others (peer port, both ways): L still replicates to
		// and is notified by the others, but its own etcd member is a minority of one, so it
		// cannot renew its lease and is replaced while its data path works.
		l := r.leader(m)
		var drops []netns.Drop
		for _, o := range r.others(l) {
			drops = append(drops, netns.Drop{From: l.Host, To: o.Host, Ports: []int{netns.EtcdPeerPort}},
				netns.Drop{From: o.Host, To: l.Host, Ports: []int{netns.EtcdPeerPort}})
		}
		r.nw.Cut(drops...)
		return fmt.Sprintf("etcd peer traffic of node %d (leader) cut, replication and clients not", l.ID)
	}},
	{"coordinator-and-etcd-leader-in-minority", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		co := r.c.NodeByIP(m.Coordinator)
		if co == nil {
			r.t.Fatalf("no node at the coordinator's address %q", m.Coordinator)
		}
		// Make the coordinator's node the etcd leader too, then isolate it.
		mm := r.meta(fmt.Sprintf("node%d", co.ID))
		for _, o := range r.others(co) {
			r.nw.CutBoth(co.Host, o.Host)
		}
		return fmt.Sprintf("node %d (coordinator, etcd leader %s) cut from the other nodes", co.ID, mm.EtcdLeader)
	}},
	{"split-1|2-leader-alone-with-a-client", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		l := r.leader(m)
		side := []*netns.Host{l.Host, r.clients[0]}
		rest := []*netns.Host{r.clients[1], r.clients[2]}
		for _, o := range r.others(l) {
			rest = append(rest, o.Host)
		}
		r.nw.Split(side, rest)
		return fmt.Sprintf("split {node %d (leader), c1} | {other nodes, c2, c3}", l.ID)
	}},
	{"split-2|1-follower-alone-with-a-client", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		l := r.leader(m)
		fs := r.others(l)
		f := fs[r.rng.IntN(len(fs))]
		side := []*netns.Host{f.Host, r.clients[0]}
		rest := []*netns.Host{r.clients[1], r.clients[2]}
		for _, n := range r.c.Nodes {
			if n != f {
				rest = append(rest, n.Host)
			}
		}
		r.nw.Split(side, rest)
		return fmt.Sprintf("split {node %d (follower), c1} | {node %d (leader), the third node, c2, c3}", f.ID, l.ID)
	}},
	{"asymmetric-drop", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		l := r.leader(m)
		var drops []netns.Drop
		out := r.rng.IntN(2) == 0
		for _, o := range r.others(l) {
			if out {
				drops = append(drops, netns.Drop{From: l.Host, To: o.Host})
			} else {
				drops = append(drops, netns.Drop{From: o.Host, To: l.Host})
			}
		}
		r.nw.Cut(drops...)
		if out {
			return fmt.Sprintf("packets from node %d (leader) to the other nodes dropped, not back", l.ID)
		}
		return fmt.Sprintf("packets from the other nodes to node %d (leader) dropped, not back", l.ID)
	}},
	{"leader-killed", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		// Not a partition: the process of L dies (kill -9) and is restarted at the heal. Its
		// port refuses connections, so the coordinator's liveness probe fails it over
		// without waiting for its lease (docs/cluster.md, "Failover in under 2 s").
		l := r.leader(m)
		l.Kill()
		r.onHeal = append(r.onHeal, func() {
			l.Start()
			l.WaitReady(time.Minute)
		})
		return fmt.Sprintf("node %d (leader) killed with SIGKILL, restarted at the heal", l.ID)
	}},
	{"leader-paused", func(r *partitionRun, m netns.Meta, _ time.Duration) string {
		// L stops (SIGSTOP) and resumes at the heal: its port still accepts connections, so
		// only its lease can fail it over.
		l := r.leader(m)
		l.Pause()
		r.onHeal = append(r.onHeal, l.Resume)
		return fmt.Sprintf("node %d (leader) paused with SIGSTOP, resumed at the heal", l.ID)
	}},
	{"flapping-link", func(r *partitionRun, m netns.Meta, hold time.Duration) string {
		l := r.leader(m)
		o := r.others(l)[r.rng.IntN(2)]
		end := time.Now().Add(hold)
		flaps := 0
		for time.Now().Before(end) {
			r.nw.CutBoth(l.Host, o.Host)
			time.Sleep(time.Duration(200+r.rng.IntN(1300)) * time.Millisecond)
			r.nw.HealAll()
			time.Sleep(time.Duration(200+r.rng.IntN(1300)) * time.Millisecond)
			flaps++
		}
		r.nw.CutBoth(l.Host, o.Host)
		return fmt.Sprintf("link node %d (leader) <-> node %d cut and healed %d times", l.ID, o.ID, flaps)
	}},
}

// inject runs fault f for hold, heals, and waits until every client is acknowledged again.
func (r *partitionRun) inject(i int, f faultKind, hold time.Duration) {
	r.t.Helper()
	m := r.meta("")
	rec := faultRecord{name: f.name, start: time.Now()}
	desc := f.cut(r, m, hold)
	// Every table's leaders, the coordinator and the etcd leader at the cut: which of them sat
	// on the cut-off node decides much of that fault's unavailability (docs/cluster.md,
	// "Partition tests").
	coord := "?"
	if n := r.c.NodeByIP(m.Coordinator); n != nil {
		coord = fmt.Sprintf("node%d", n.ID)
	}
	r.t.Logf("fault %d %s: %s; leaders %v, coordinator %s, etcd leader %s; rules %s; holding %s", i, f.name, desc, m.Leaders, coord, m.EtcdLeader, r.nw.Rules(), hold)
	if f.name != "flapping-link" {
		time.Sleep(hold)
	}
	r.nw.HealAll()
	for _, undo := range r.onHeal {
		undo()
	}
	r.onHeal = nil
	rec.heal = time.Now()
	r.waitProgress(rec.heal, time.Minute)
	rec.recovered = time.Now()
	r.done = append(r.done, rec)
}

func (r *partitionRun) meta(moveEtcdLeaderTo string) netns.Meta {
	r.t.Helper()
	cfg := r.base
	cfg.Mode, cfg.MoveEtcdLeaderTo = "meta", moveEtcdLeaderTo
	var m netns.Meta
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = netns.RunWorker(r.t, r.ctl, cfg, time.Minute, &m); err == nil && len(m.Leaders[r.base.LogTable]) > 0 {
			return m
		}
		time.Sleep(time.Second)
	}
	r.t.Fatalf("cluster metadata: %v (%+v)", err, m)
	return m
}

func (r *partitionRun) leader(m netns.Meta) *netns.Node {
	r.t.Helper()
	id, ok := m.Leaders[r.base.LogTable][0]
	n := r.c.Node(id)
	if !ok || n == nil {
		r.t.Fatalf("no leader of bucket 0: %+v", m)
	}
	return n
}

func (r *partitionRun) others(n *netns.Node) []*netns.Node {
	var out []*netns.Node
	for _, o := range r.c.Nodes {
		if o != n {
			out = append(out, o)
		}
	}
	return out
}

// history is every client's history so far (a worker still running may have a partial last
// line, which is left out).
func (r *partitionRun) history() []history.Op {
	r.t.Helper()
	var all []history.Op
	for _, w := range r.workers {
		f, err := os.Open(w.Cfg.Out)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			r.t.Fatal(err)
		}
		ops, err := history.ReadOps(f)
		f.Close()
		if err != nil {
			r.t.Fatalf("history of worker %d: %v", w.Cfg.Proc, err)
		}
		all = append(all, ops...)
	}
	return all
}

// waitProgress waits until every client had an append and an upsert acknowledged after
// since, failing the test after timeout: a healed cluster must serve every client again.
func (r *partitionRun) waitProgress(since time.Time, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		type progress struct{ appends, upserts bool }
		got := map[int]*progress{}
		for _, w := range r.workers {
			got[w.Cfg.Proc] = &progress{}
		}
		for _, o := range r.history() {
			if o.Outcome != history.OK || o.Return <= since.UnixNano() {
				continue
			}
			if p := got[o.Proc]; p != nil {
				p.appends = p.appends || o.Kind == history.Append
				p.upserts = p.upserts || o.Kind == history.Upsert
			}
		}
		var stuck []int
		for proc, p := range got {
			if !p.appends || !p.upserts {
				stuck = append(stuck, proc)
			}
		}
		if len(stuck) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("clients %v had no append or no upsert acknowledged within %s of %s (rules %s)", stuck, timeout, since.Format(time.TimeOnly), r.nw.Rules())
		}
		time.Sleep(500 * time.Millisecond)
	}
}
