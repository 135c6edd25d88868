package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// connect opens a Go client on every node's coordinator listener.
func connect(t *testing.T, ctx context.Context, c *clustertest.Cluster) *fluss.Connection {
	t.Helper()
	conn, err := fluss.Connect(ctx, fluss.Config{
		BootstrapServers:   c.Bootstrap(),
		WriterBatchTimeout: 2 * time.Millisecond,
		RequestTimeout:     10 * time.Second,
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	waitFormed(t, ctx, c)
	return conn
}

// waitFormed waits until every node sees every tablet server and an active coordinator: each
// node reports ready on its own and learns of the others through etcd a moment later, and
// any node may answer metadata or validate DDL.
func waitFormed(t testing.TB, ctx context.Context, c *clustertest.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		nc, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: n.CoordinatorAddr})
		if err != nil {
			t.Fatalf("connect to node %d: %v", n.ID, err)
		}
		waitServers(t, ctx, nc, len(c.Nodes))
		nc.Close()
	}
}

// waitServers waits until conn's metadata lists n live tablet servers and an active coordinator.
func waitServers(t testing.TB, ctx context.Context, conn *fluss.Connection, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		nodes, err := conn.Admin().GetServerNodes(ctx)
		tablets, coordinators := 0, 0
		for _, s := range nodes {
			if s.Type == fluss.CoordinatorServer {
				coordinators++
			} else {
				tablets++
			}
		}
		if err == nil && tablets == n && coordinators == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not formed after a minute: %d tablet servers, %d coordinators (%v)", tablets, coordinators, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTable creates db.name (the database too) and returns the table.
func createTable(t *testing.T, ctx context.Context, conn *fluss.Connection, name string, desc fluss.TableDescriptor) *fluss.Table {
	t.Helper()
	admin := conn.Admin()
	if err := admin.CreateDatabase(ctx, "fault", nil, true); err != nil {
		t.Fatalf("create database: %v", err)
	}
	path := fluss.TablePath{Database: "fault", Table: name}
	if err := admin.CreateTable(ctx, path, desc, false); err != nil {
		t.Fatalf("create table %s: %v", path, err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatalf("open table %s: %v", path, err)
	}
	return table
}

func logTable() fluss.TableDescriptor {
	return fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("payload", fluss.String()),
	})}
}

func pkTable() fluss.TableDescriptor {
	return fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("version", fluss.BigInt()),
	}, "id")}
}

// acked records which writes the cluster acknowledged, and which failed.
type acked struct {
	mu     sync.Mutex
	ids    map[int64]int64 // id -> value acknowledged last
	failed []error
}

func (a *acked) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

// stream writes rows id = 0, 1, 2, ... through write until stop is closed, keeping up to
// window writes in flight, and records each acknowledgement. It returns when every write it
// started has been answered.
func stream(ctx context.Context, a *acked, stop <-chan struct{}, window int, write func(ctx context.Context, id int64) (*fluss.WriteResult, error), value func(id int64) int64) {
	type inflight struct {
		id int64
		r  *fluss.WriteResult
	}
	var pending []inflight
	settle := func(n int) {
		for len(pending) > n {
			p := pending[0]
			pending = pending[1:]
			err := p.r.Wait(ctx)
			a.mu.Lock()
			if err != nil {
				a.failed = append(a.failed, fmt.Errorf("write %d: %w", p.id, err))
			} else {
				a.ids[p.id] = value(p.id)
			}
			a.mu.Unlock()
		}
	}
	for id := int64(0); ; id++ {
		select {
		case <-stop:
			settle(0)
			return
		default:
		}
		r, err := write(ctx, id)
		if err != nil {
			a.mu.Lock()
			a.failed = append(a.failed, fmt.Errorf("write %d: %w", id, err))
			a.mu.Unlock()
			continue
		}
		pending = append(pending, inflight{id, r})
		settle(window)
	}
}

// streaming is a stream of writes running in the background (see stream).
type streaming struct {
	*acked
	stop chan struct{}
	done chan struct{}
}

// startStream runs stream in the background with 256 writes in flight.
func startStream(ctx context.Context, write func(ctx context.Context, id int64) (*fluss.WriteResult, error), value func(id int64) int64) *streaming {
	s := &streaming{acked: &acked{ids: map[int64]int64{}}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		stream(ctx, s.acked, s.stop, 256, write, value)
	}()
	return s
}

// end stops the stream and waits until every write it started was answered.
func (s *streaming) end() {
	close(s.stop)
	<-s.done
}

// startAppends streams appends of rows (id, "payload") to a log table.
func startAppends(t *testing.T, ctx context.Context, table *fluss.Table) *streaming {
	t.Helper()
	w, err := table.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return startStream(ctx, func(ctx context.Context, id int64) (*fluss.WriteResult, error) {
		return w.Append(ctx, fluss.Row{id, "payload"})
	}, func(id int64) int64 { return id })
}

// waitAcked waits until at least n writes are acknowledged, failing the test after timeout.
func waitAcked(t *testing.T, a *acked, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for a.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes acknowledged after %s", a.count(), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leaderOf returns the tablet server leading bucket of table.
func leaderOf(t *testing.T, ctx context.Context, conn *fluss.Connection, table *fluss.Table, bucket int32) int32 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		leaders, err := conn.Admin().BucketLeaders(ctx, table.Path(), "")
		if err == nil {
			if n, ok := leaders[bucket]; ok {
				return n.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket %d of %s has no leader: %v", bucket, table.Path(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readLog reads every bucket of a log table (or a PK table's changelog) from the earliest
// offset to the latest, returning the records in offset order per bucket.
func readLog(t *testing.T, ctx context.Context, conn *fluss.Connection, table *fluss.Table) map[int32][]fluss.ScanRecord {
	t.Helper()
	buckets := bucketIDs(table)
	ends, err := conn.Admin().ListOffsets(ctx, table.Path(), buckets, fluss.OffsetLatest())
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	sc, err := table.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	out := map[int32][]fluss.ScanRecord{}
	for _, b := range buckets {
		if ends[b] > 0 {
			if err := sc.Subscribe(ctx, b, fluss.EarliestOffset); err != nil {
				t.Fatalf("subscribe bucket %d: %v", b, err)
			}
		}
	}
	done := func() bool {
		for _, b := range buckets {
			if recs := out[b]; ends[b] > 0 && (len(recs) == 0 || recs[len(recs)-1].Offset < ends[b]-1) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("log of %s not read to its end %v within a minute", table.Path(), ends)
		}
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		for _, r := range recs {
			out[r.Bucket.Bucket] = append(out[r.Bucket.Bucket], r)
		}
	}
	return out
}

// bucketIDs lists the ids of table's buckets, 0 to NumBuckets-1.
func bucketIDs(table *fluss.Table) []int32 {
	buckets := make([]int32, table.Info().NumBuckets())
	for i := range buckets {
		buckets[i] = int32(i)
	}
	return buckets
}

// waitLogEnds waits until the latest offsets of table's buckets add up to at least want
// rows: after a restart a leader's high watermark starts at its checkpoint and rises only
// when its followers fetch.
func waitLogEnds(t *testing.T, ctx context.Context, conn *fluss.Connection, table *fluss.Table, want int64, within time.Duration) {
	t.Helper()
	buckets := bucketIDs(table)
	start := time.Now()
	var total int64
	for {
		ends, err := conn.Admin().ListOffsets(ctx, table.Path(), buckets, fluss.OffsetLatest())
		if err == nil {
			total = 0
			for _, e := range ends {
				total += e
			}
			if total >= want {
				t.Logf("log of %s visible to offset sum %d after %v", table.Path(), total, time.Since(start).Round(time.Millisecond))
				return
			}
		}
		if time.Since(start) > within {
			t.Fatalf("log of %s: latest offsets add up to %d (last error %v), want %d, after %v", table.Path(), total, err, want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkLogExactlyOnce checks that every acknowledged id is in the log exactly once and that no
// id is there twice.
func checkLogExactlyOnce(t *testing.T, a *acked, log map[int32][]fluss.ScanRecord) {
	t.Helper()
	seen := map[int64]int{}
	for _, recs := range log {
		for _, r := range recs {
			seen[r.Row[0].(int64)]++
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var missing []int64
	for id := range a.ids {
		if seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	var dups []int64
	for id, n := range seen {
		if n > 1 {
			dups = append(dups, id)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	if len(missing) > 0 || len(dups) > 0 {
		t.Fatalf("%d acknowledged writes, %d rows read: %d acknowledged missing (first %v), %d duplicated (%v)",
			len(a.ids), len(seen), len(missing), head(missing), len(dups), head(dups))
	}
}

func head(ids []int64) []int64 {
	if len(ids) > 10 {
		return ids[:10]
	}
	return ids
}

// checkNoFailedWrites fails the test if a write failed: clients must ride out a fault by
// themselves, without application-level retries.
func checkNoFailedWrites(t *testing.T, a *acked) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failed) > 0 {
		t.Fatalf("%d writes failed, first: %v", len(a.failed), a.failed[0])
	}
}

// bucketLog returns the concatenated segment files of one bucket's replica on a node.
func bucketLog(n *clustertest.Node, tableID int64, bucket int32) ([]byte, error) {
	dir := filepath.Join(n.DataDir, "tablet", fmt.Sprintf("table-%d", tableID), fmt.Sprintf("bucket-%d", bucket))
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, b...)
	}
	return all, nil
}

// checkReplicasIdentical waits until every replica of every bucket holds the same log bytes,
// as they must once the followers have caught up. (A bucket may be empty: log writers pick
// buckets per batch.)
func checkReplicasIdentical(t *testing.T, c *clustertest.Cluster, table *fluss.Table) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for b := int32(0); b < table.Info().NumBuckets(); b++ {
		for {
			err := compareReplicas(c, table.Info().TableID, b)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replicas of bucket %d differ a minute after the fault: %v", b, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func compareReplicas(c *clustertest.Cluster, tableID int64, bucket int32) error {
	logs := make([][]byte, len(c.Nodes))
	for i, n := range c.Nodes {
		b, err := bucketLog(n, tableID, bucket)
		if err != nil {
			return err
		}
		logs[i] = b
	}
	for i := 1; i < len(logs); i++ {
		if !bytes.Equal(logs[0], logs[i]) {
			return fmt.Errorf("node %d holds %d bytes, node %d %d bytes (common prefix %d)",
				c.Nodes[0].ID, len(logs[0]), c.Nodes[i].ID, len(logs[i]), commonPrefix(logs[0], logs[i]))
		}
	}
	return nil
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
