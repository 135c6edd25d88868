package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/tests/clustertest"
)

// BenchmarkScale measures what a 3-node cluster costs per bucket (docs/cluster.md, "Scale"):
// it creates SCALE_BUCKETS buckets (SCALE_BUCKETS_PER_TABLE per log table, replication factor
// SCALE_RF) and reports the etcd database size and write rate during creation and idle, the
// GET_METADATA latency for every table and for one, RSS and open file descriptors per idle
// replica per node, the failover time of the node (not the active coordinator) leading the
// most buckets, the failover time of the active coordinator, and the time a full-cluster
// restart takes until every bucket is served again. A bucket counts as served when metadata
// names a live leader for it and LIST_OFFSETS on every bucket of every table succeeds (that
// request is answered only by the bucket's leader), and one append to each of SCALE_SAMPLE
// tables is acknowledged. It runs once whatever -benchtime says; `make bench-scale` runs it.
// Without SCALE_BUCKETS it is skipped.
func BenchmarkScale(b *testing.B) {
	buckets := envInt(b, "SCALE_BUCKETS", 0)
	if buckets == 0 {
		b.Skip("SCALE_BUCKETS unset (make bench-scale)")
	}
	perTable := envInt(b, "SCALE_BUCKETS_PER_TABLE", 100)
	rf := envInt(b, "SCALE_RF", 3)
	if perTable <= 0 || buckets%perTable != 0 || rf < 1 || rf > 3 {
		b.Fatalf("SCALE_BUCKETS (%d) must be a multiple of SCALE_BUCKETS_PER_TABLE (%d); SCALE_RF (%d) 1..3", buckets, perTable, rf)
	}
	set := map[string]string{}
	for k, v := range faultOptions {
		set[k] = v
	}
	set["default.replication.factor"] = strconv.Itoa(rf)
	// SCALE_LEASE_TTL replaces the fault tests' 2 s leases, which an overloaded machine
	// misses (docs/cluster.md, "Scale").
	if ttl := os.Getenv("SCALE_LEASE_TTL"); ttl != "" {
		set["tablet-server.lease-ttl"], set["coordinator.lease-ttl"] = ttl, ttl
	}
	// SCALE_FENCE_AFTER replaces coordinator.heartbeat.fence-after (800 ms): at load ~55 on
	// 2 cores the coordinator fenced tablet servers that missed heartbeats while buckets were
	// created, and each fence moved their leaderships (docs/cluster.md, "Scale").
	if fa := os.Getenv("SCALE_FENCE_AFTER"); fa != "" {
		set["coordinator.heartbeat.fence-after"] = fa
	}
	// SCALE_MAX_LAG replaces the fault tests' 3 s log.replica.max-lag-time: under load,
	// followers of thousands of buckets fall that far behind while buckets are created or
	// move, the ISR shrinks and expands again, and each change is an etcd write that slows
	// the next (docs/cluster.md, "Scale"). Unset, the benchmark keeps the fault tests' value.
	if lag := os.Getenv("SCALE_MAX_LAG"); lag != "" {
		set["log.replica.max-lag-time"] = lag
	}
	if rf < 3 {
		// With RF=2 a node's death leaves one replica: min ISR 2 would refuse every append.
		set["log.replica.min-in-sync-replicas-number"] = "1"
	}
	// Profiles of every node under /debug/pprof/ on its HTTP listener (logged below), for
	// looking at the coordinator and the tablet servers while buckets are created or fail over.
	set["debug.pprof.enabled"] = "true"
	ctx := context.Background()
	c := clustertest.StartCluster(b, stromBin, clustertest.ClusterOptions{Set: set, HTTP: true, ReadyTimeout: 10 * time.Minute})
	for _, n := range c.Nodes {
		b.Logf("scale: node %d profiles at http://%s/debug/pprof/", n.ID, n.HTTPAddr)
	}
	waitFormed(b, ctx, c)
	r := &scaleRun{b: b, c: c, perTable: perTable}
	r.connect(ctx)
	defer func() { r.conn.Close() }()
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Nodes[0].ClientURL, c.Nodes[1].ClientURL, c.Nodes[2].ClientURL}, DialTimeout: 5 * time.Second, TLS: c.EtcdTLS()})
	if err != nil {
		b.Fatal(err)
	}
	defer etcd.Close()
	r.etcd = etcd
	report := func(v float64, unit string) {
		b.ReportMetric(v, unit)
		b.Logf("scale: %-28s %.3f", unit, v)
	}
	b.Logf("scale: %d buckets in %d tables of %d, RF=%d, 3 nodes", buckets, buckets/perTable, perTable, rf)

	base := r.nodeUsage()
	dbBefore, revBefore := r.etcdStatus(ctx)

	// Creation.
	start := time.Now()
	r.createTables(ctx, buckets/perTable)
	created := time.Since(start)
	r.waitServed(ctx, 0, 30*time.Minute)
	allLed := time.Since(start)
	dbCreated, revCreated := r.etcdStatus(ctx)
	report(created.Seconds(), "create-s")
	report(allLed.Seconds(), "create-to-served-s")
	report(float64(buckets)/created.Seconds(), "buckets/s-created")
	report(float64(revCreated-revBefore)/allLed.Seconds(), "etcd-writes/s-creating")
	report(float64(revCreated-revBefore)/float64(buckets), "etcd-writes/bucket-created")
	report(float64(dbCreated)/(1<<20), "etcd-db-MiB-created")

	// Idle.
	const idle = 30 * time.Second
	time.Sleep(idle)
	dbIdle, revIdle := r.etcdStatus(ctx)
	report(float64(revIdle-revCreated)/idle.Seconds(), "etcd-writes/s-idle")
	report(float64(dbIdle)/(1<<20), "etcd-db-MiB")
	report(float64(dbIdle-dbBefore)/float64(buckets), "etcd-db-B/bucket")
	keys := r.etcdKeys(ctx)
	report(float64(keys), "etcd-keys")
	idleUsage := r.nodeUsage()
	replicasPerNode := float64(buckets*rf) / float64(len(c.Nodes))
	var rssMax, fdMax float64
	for i := range idleUsage {
		rss := float64(idleUsage[i].rss-base[i].rss) / replicasPerNode
		fds := float64(idleUsage[i].fds-base[i].fds) / replicasPerNode
		b.Logf("scale: node %d: RSS %d MiB (%d MiB before), %d fds (%d before), %d threads; %.0f B RSS, %.3f fds per replica",
			c.Nodes[i].ID, idleUsage[i].rss>>20, base[i].rss>>20, idleUsage[i].fds, base[i].fds, idleUsage[i].threads, rss, fds)
		rssMax, fdMax = max(rssMax, rss), max(fdMax, fds)
	}
	report(rssMax/1024, "max-RSS-KiB/replica")
	report(fdMax, "max-fds/replica")

	// GET_METADATA.
	all, one := r.metadataLatency(ctx, 5)
	report(float64(all.Microseconds())/1000, "metadata-all-ms")
	report(float64(one.Microseconds())/1000, "metadata-one-ms")

	// A tablet server leading about a third of the buckets.
	coord := r.activeCoordinator(ctx)
	leads := r.leaderCounts(ctx)
	var victim *clustertest.Node
	for _, n := range c.Nodes {
		if n != coord && (victim == nil || leads[n.ID] > leads[victim.ID]) {
			victim = n
		}
	}
	b.Logf("scale: killing node %d, leader of %d buckets (the active coordinator is node %d)", victim.ID, leads[victim.ID], coord.ID)
	start = time.Now()
	victim.Kill()
	r.waitServed(ctx, victim.ID, 30*time.Minute)
	report(time.Since(start).Seconds(), "tablet-failover-s")
	report(float64(leads[victim.ID]), "tablet-failover-buckets")
	r.restartAndWait(ctx, victim)

	// The active coordinator: until a CREATE_TABLE succeeds and the table is served.
	coord = r.activeCoordinator(ctx)
	b.Logf("scale: killing node %d, the active coordinator", coord.ID)
	start = time.Now()
	coord.Kill()
	path := fluss.TablePath{Database: "scale", Table: "after_coordinator_kill"}
	desc := logTable()
	desc.BucketCount = 1
	// One node is down: RF=2 is the most the live servers can place.
	desc.Properties = map[string]string{"table.replication.factor": strconv.Itoa(min(rf, len(c.Nodes)-1))}
	if err := r.conn.Admin().CreateTable(ctx, path, desc, false); err != nil {
		b.Fatalf("create table after killing the coordinator: %v", err)
	}
	report(time.Since(start).Seconds(), "coordinator-failover-ddl-s")
	r.paths = append(r.paths, path)
	r.waitServed(ctx, coord.ID, 30*time.Minute)
	report(time.Since(start).Seconds(), "coordinator-node-failover-s")
	r.restartAndWait(ctx, coord)

	// A full-cluster restart.
	start = time.Now()
	for _, n := range c.Nodes {
		n.Kill()
	}
	for _, n := range c.Nodes {
		n.Start()
	}
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.WaitReady(30 * time.Minute) }()
	}
	wg.Wait()
	report(time.Since(start).Seconds(), "restart-to-ready-s")
	r.conn.Close()
	r.connect(ctx)
	r.waitServed(ctx, 0, 30*time.Minute)
	report(time.Since(start).Seconds(), "restart-to-served-s")
}

// scaleRun is the state of one BenchmarkScale run.
type scaleRun struct {
	b        *testing.B
	c        *clustertest.Cluster
	conn     *fluss.Connection
	etcd     *clientv3.Client
	perTable int
	paths    []fluss.TablePath
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

func (r *scaleRun) connect(ctx context.Context) {
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: r.c.Bootstrap(), WriterBatchTimeout: time.Millisecond, RequestTimeout: time.Minute,
		// A sample append that is still refused after this many retries (about a minute and a
		// half at the writer's 1 s retry cap) fails the run with its error instead of hanging.
		WriterRetries: 100})
	if err != nil {
		r.b.Fatal(err)
	}
	r.conn = conn
}

// createTables creates n tables of perTable buckets each, four at a time.
func (r *scaleRun) createTables(ctx context.Context, n int) {
	admin := r.conn.Admin()
	if err := admin.CreateDatabase(ctx, "scale", nil, true); err != nil {
		r.b.Fatal(err)
	}
	r.paths = make([]fluss.TablePath, n)
	for i := range r.paths {
		r.paths[i] = fluss.TablePath{Database: "scale", Table: fmt.Sprintf("t%05d", i)}
	}
	var next atomic.Int64
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			desc := logTable()
			desc.BucketCount = int32(r.perTable)
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				// Under load the server's wait for the new buckets' leaders can outlast the
				// request (REQUEST_TIME_OUT) while the table was created, and a tablet server
				// whose lease renewal was late is briefly not live (INVALID_REPLICATION_FACTOR):
				// ask again after a backoff (1 s doubling to 16 s, ~2 min in all), accepting it.
				err := admin.CreateTable(ctx, r.paths[i], desc, false)
				for try := 0; err != nil && try < 10; try++ {
					r.b.Logf("scale: create %s: %v; again", r.paths[i], err)
					time.Sleep(min(time.Second<<try, 16*time.Second))
					err = admin.CreateTable(ctx, r.paths[i], desc, true)
				}
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", r.paths[i], err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		r.b.Fatal(err)
	}
}

// metadata asks the coordinator of node 0 that is running for the metadata of paths.
func (r *scaleRun) metadata(ctx context.Context, paths []fluss.TablePath) (*flusspb.MetadataResponse, error) {
	var addr string
	for _, n := range r.c.Nodes {
		if n.Running() {
			addr = n.CoordinatorAddr
			break
		}
	}
	cc, err := wire.Dial(ctx, addr, wire.ClientConfig{SoftwareName: "bench-scale"})
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	req := &flusspb.MetadataRequest{}
	for _, p := range paths {
		req.TablePath = append(req.TablePath, &flusspb.PbTablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)})
	}
	var resp flusspb.MetadataResponse
	if err := cc.Call(ctx, wire.GetMetadata, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// metadataLatency returns the median of n GET_METADATA calls for every table and for one,
// each on a connection already open.
func (r *scaleRun) metadataLatency(ctx context.Context, n int) (all, one time.Duration) {
	cc, err := wire.Dial(ctx, r.c.Nodes[0].CoordinatorAddr, wire.ClientConfig{SoftwareName: "bench-scale"})
	if err != nil {
		r.b.Fatal(err)
	}
	defer cc.Close()
	measure := func(paths []fluss.TablePath) time.Duration {
		req := &flusspb.MetadataRequest{}
		for _, p := range paths {
			req.TablePath = append(req.TablePath, &flusspb.PbTablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)})
		}
		var times []time.Duration
		for range n {
			var resp flusspb.MetadataResponse
			start := time.Now()
			if err := cc.Call(ctx, wire.GetMetadata, req, &resp); err != nil {
				r.b.Fatalf("metadata of %d tables: %v", len(paths), err)
			}
			times = append(times, time.Since(start))
			if len(resp.GetTableMetadata()) != len(paths) {
				r.b.Fatalf("metadata answered %d tables of %d", len(resp.GetTableMetadata()), len(paths))
			}
		}
		slices.Sort(times)
		return times[len(times)/2]
	}
	return measure(r.paths), measure(r.paths[:1])
}

// leaderCounts is how many buckets each server leads, from metadata.
func (r *scaleRun) leaderCounts(ctx context.Context) map[int32]int {
	resp, err := r.metadata(ctx, r.paths)
	if err != nil {
		r.b.Fatal(err)
	}
	out := map[int32]int{}
	for _, tm := range resp.GetTableMetadata() {
		for _, bm := range tm.GetBucketMetadata() {
			out[bm.GetLeaderId()]++
		}
	}
	return out
}

// waitServed waits until metadata names a leader other than down (0: none is down) for every
// bucket, every bucket answers LIST_OFFSETS, and one append to each of up to SCALE_SAMPLE
// tables is acknowledged.
func (r *scaleRun) waitServed(ctx context.Context, down int32, timeout time.Duration) {
	r.b.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		resp, err := r.metadata(ctx, r.paths)
		pending := 0
		if err == nil {
			for _, tm := range resp.GetTableMetadata() {
				for _, bm := range tm.GetBucketMetadata() {
					if l := bm.GetLeaderId(); l < 0 || l == down || bm.LeaderId == nil {
						pending++
					}
				}
			}
			if len(resp.GetTableMetadata()) != len(r.paths) {
				err = fmt.Errorf("metadata answered %d tables of %d", len(resp.GetTableMetadata()), len(r.paths))
			}
		}
		if err == nil && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.b.Fatalf("buckets not led after %s: %d pending (%v)", timeout, pending, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	led := time.Since(start)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := r.forTables(ctx, r.paths, func(p fluss.TablePath) error {
		buckets := make([]int32, r.bucketsOf(p))
		for i := range buckets {
			buckets[i] = int32(i)
		}
		_, err := r.conn.Admin().ListOffsets(ctx, p, buckets, fluss.OffsetLatest())
		return err
	}); err != nil {
		r.b.Fatalf("list offsets: %v", err)
	}
	listed := time.Since(start)
	sample := envInt(r.b, "SCALE_SAMPLE", 30)
	step := max(1, len(r.paths)/sample)
	var sampled []fluss.TablePath
	for i := 0; i < len(r.paths) && len(sampled) < sample; i += step {
		sampled = append(sampled, r.paths[i])
	}
	if err := r.forTables(ctx, sampled, func(p fluss.TablePath) error {
		// A sample append that waits for a leader the client cannot resolve retries without
		// counting attempts; bound it and say what each node's metadata shows.
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := r.sampleAppend(ctx, p); err != nil {
			return fmt.Errorf("%w; metadata: %s", err, r.describeLeaders(p))
		}
		return nil
	}); err != nil {
		r.b.Fatalf("sample appends: %v", err)
	}
	r.b.Logf("scale: served after %.1f s: every bucket led in metadata at %.1f s, LIST_OFFSETS on all at %.1f s",
		time.Since(start).Seconds(), led.Seconds(), listed.Seconds())
}

// sampleAppend appends one row to p and waits for its acknowledgement.
func (r *scaleRun) sampleAppend(ctx context.Context, p fluss.TablePath) error {
	t, err := r.conn.Table(ctx, p)
	if err != nil {
		return err
	}
	w, err := t.NewAppend().CreateWriter()
	if err != nil {
		return err
	}
	defer w.Close()
	res, err := w.Append(ctx, fluss.Row{int64(1), "scale"})
	if err != nil {
		return err
	}
	return res.Wait(ctx)
}

// describeLeaders says, for each running node's tablet listener (where clients read
// metadata), which tablet servers its GET_METADATA answer lists and how many of p's
// buckets name a leader missing from that list or no leader at all.
func (r *scaleRun) describeLeaders(p fluss.TablePath) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for _, n := range r.c.Nodes {
		if !n.Running() {
			continue
		}
		desc, err := func() (string, error) {
			cc, err := wire.Dial(ctx, n.TabletAddr, wire.ClientConfig{SoftwareName: "bench-scale"})
			if err != nil {
				return "", err
			}
			defer cc.Close()
			req := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)}}}
			var resp flusspb.MetadataResponse
			if err := cc.Call(ctx, wire.GetMetadata, req, &resp); err != nil {
				return "", err
			}
			listed := map[int32]bool{}
			var ids []int32
			for _, s := range resp.GetTabletServers() {
				listed[s.GetNodeId()] = true
				ids = append(ids, s.GetNodeId())
			}
			unlisted, none := map[int32]int{}, 0
			for _, tm := range resp.GetTableMetadata() {
				for _, bm := range tm.GetBucketMetadata() {
					switch {
					case bm.LeaderId == nil || bm.GetLeaderId() < 0:
						none++
					case !listed[bm.GetLeaderId()]:
						unlisted[bm.GetLeaderId()]++
					}
				}
			}
			return fmt.Sprintf("servers %v, buckets without a leader %d, led by unlisted servers %v", ids, none, unlisted), nil
		}()
		if err != nil {
			desc = err.Error()
		}
		out = append(out, fmt.Sprintf("node %d: %s", n.ID, desc))
	}
	return strings.Join(out, "; ")
}

func (r *scaleRun) bucketsOf(p fluss.TablePath) int {
	if strings.HasPrefix(p.Table, "t") {
		return r.perTable
	}
	return 1
}

// forTables runs f for each path, eight at a time, and returns the first error.
func (r *scaleRun) forTables(ctx context.Context, paths []fluss.TablePath, f func(fluss.TablePath) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(paths) && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := f(paths[i]); err != nil {
					first.CompareAndSwap(nil, fmt.Errorf("%s: %w", paths[i], err))
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return ctx.Err()
}

func (r *scaleRun) restartAndWait(ctx context.Context, n *clustertest.Node) {
	n.Start()
	n.WaitReady(30 * time.Minute)
	r.waitServed(ctx, 0, 30*time.Minute)
	// Let the restarted node rejoin every ISR before the next kill (min ISR 2).
	time.Sleep(10 * time.Second)
}

func (r *scaleRun) activeCoordinator(ctx context.Context) *clustertest.Node {
	deadline := time.Now().Add(time.Minute)
	for {
		nodes, err := r.conn.Admin().GetServerNodes(ctx)
		if err == nil {
			for _, s := range nodes {
				if s.Type != fluss.CoordinatorServer {
					continue
				}
				for _, n := range r.c.Nodes {
					if n.CoordinatorAddr == s.Addr() {
						return n
					}
				}
			}
		}
		if time.Now().After(deadline) {
			r.b.Fatalf("no active coordinator after a minute: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// etcdStatus is the largest db size and the revision over the members.
func (r *scaleRun) etcdStatus(ctx context.Context) (dbSize int64, rev int64) {
	for _, n := range r.c.Nodes {
		st, err := r.etcd.Status(ctx, strings.TrimPrefix(strings.TrimPrefix(n.ClientURL, "http://"), "https://"))
		if err != nil {
			r.b.Fatalf("etcd status of node %d: %v", n.ID, err)
		}
		dbSize, rev = max(dbSize, st.DbSize), max(rev, st.Header.Revision)
	}
	return dbSize, rev
}

func (r *scaleRun) etcdKeys(ctx context.Context) int64 {
	resp, err := r.etcd.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		r.b.Fatal(err)
	}
	return resp.Count
}

type usage struct{ rss, fds, threads int64 }

// nodeUsage reads each node's resident memory, open file descriptors and threads from /proc.
func (r *scaleRun) nodeUsage() []usage {
	out := make([]usage, len(r.c.Nodes))
	for i, n := range r.c.Nodes {
		pid := n.Pid()
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			r.b.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			v, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmRSS:":
				out[i].rss = v << 10
			case "Threads:":
				out[i].threads = v
			}
		}
		fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		if err != nil {
			r.b.Fatal(err)
		}
		out[i].fds = int64(len(fds))
	}
	return out
}
