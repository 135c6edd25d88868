package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
	"github.com/stromdb/strom/tests/history"
)

// TestRollingRestartUnderLoad restarts each of the three nodes in turn — SIGTERM (a controlled
// shutdown), start again, wait until every replica is back in its ISR — while acks=all appends,
// upserts and lookups run. The clients' history must show nothing acknowledged lost
// (tests/history: appends exactly once and in real-time order per bucket, upserts and lookups
// linearizable per key), every bucket the stopped node led must have been moved away by its
// controlled shutdown (an active coordinator logged the move with none remaining, and no
// metadata asked for after the exit names the node as leader), and no bucket's
// leader may move more than once per restart: the controlled shutdown moves it away once,
// nothing moves it again (docs/cluster.md, "Rolling restarts"). CLUSTER_LONG=1 restarts
// every node three times; STROM_ROLLING_ROUNDS=N restarts it N times, and
// STROM_ROLLING_LOOKUPERS=N runs N lookup loops instead of one (more chances to catch a
// stale read), and STROM_ROLLING_KEEP=DIR writes a failing run's history there (history.jsonl, one Op a line)
// for reading the offending key's operations.
func TestRollingRestartUnderLoad(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	logT := createTable(t, ctx, conn, "rolling_log", logTable())
	pkT := createTable(t, ctx, conn, "rolling_pk", pkTable())

	rec := &opRecorder{start: time.Now()}
	w := startRecordedWorkload(t, ctx, rec, logT, pkT)
	moves := watchMoves(ctx, c, logT, pkT)
	waitOps(t, rec, 2000, 60*time.Second)

	rounds := 1
	if long() {
		rounds = 3
	}
	if v := os.Getenv("STROM_ROLLING_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("STROM_ROLLING_ROUNDS=%q is not a positive number", v)
		}
		rounds = n
	}
	for round := range rounds {
		for _, n := range c.Nodes {
			before := rec.okCount()
			moves.begin(n.ID)
			marks := markLogs(c)
			t.Logf("round %d: stopping node %d (SIGTERM) after %d acknowledged writes", round+1, n.ID, before)
			if !n.Terminate(30 * time.Second) {
				t.Errorf("node %d did not stop within 30 s of SIGTERM (killed)", n.ID)
			}
			moves.exited()
			checkControlledShutdown(t, c, marks, n)
			n.Start()
			n.WaitReady(60 * time.Second)
			moves.up()
			waitInSync(t, ctx, c, 90*time.Second)
			// The workload made progress across the restart.
			waitOps(t, rec, before+1000, 60*time.Second)
		}
	}
	w.end()
	moves.end()

	ops := rec.all()
	var okAppends, okUpserts, okLookups, failed int
	for _, o := range ops {
		switch {
		case o.Outcome != history.OK:
			failed++
		case o.Kind == history.Append:
			okAppends++
		case o.Kind == history.Upsert:
			okUpserts++
		default:
			okLookups++
		}
	}
	t.Logf("history: %d acknowledged appends, %d acknowledged upserts, %d lookups, %d writes or lookups failed", okAppends, okUpserts, okLookups, failed)
	if failed > 0 {
		t.Logf("first failures: %s", strings.Join(rec.firstErrors(5), "; "))
	}

	conn2 := connect(t, ctx, c)
	logT2, err := conn2.Table(ctx, logT.Path())
	if err != nil {
		t.Fatal(err)
	}
	var records []history.Record
	for b, rs := range readLog(t, ctx, conn2, logT2) {
		for _, r := range rs {
			records = append(records, history.Record{Bucket: b, Offset: r.Offset, Key: r.Row[0].(int64)})
		}
	}
	if err := history.CheckAppends(ops, records).Err(); err != nil {
		t.Errorf("appends: %v", err)
	}
	if err := history.CheckRegisters(ops, 60*time.Second).Err(); err != nil {
		t.Errorf("upserts and lookups: %v", err)
	}
	moves.check(t)
	checkReplicasIdentical(t, c, logT2)
	if dir := os.Getenv("STROM_ROLLING_KEEP"); dir != "" && t.Failed() {
		keepHistory(t, dir, ops)
	}
}

// keepHistory writes ops to DIR/history.jsonl.
func keepHistory(t *testing.T, dir string, ops []history.Op) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("keep the history: %v", err)
		return
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Errorf("keep the history: %v", err)
		return
	}
	defer f.Close()
	if err := history.WriteOps(f, ops); err != nil {
		t.Errorf("keep the history: %v", err)
		return
	}
	t.Logf("history of %d operations kept in %s", len(ops), f.Name())
}

// opRecorder collects the history of a workload; times are nanoseconds since start.
type opRecorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []history.Op
	ok    int
}

func (r *opRecorder) now() int64 { return time.Since(r.start).Nanoseconds() }

func (r *opRecorder) add(o history.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, o)
	if o.Outcome == history.OK && o.Kind != history.Lookup {
		r.ok++
	}
}

func (r *opRecorder) okCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok
}

func (r *opRecorder) all() []history.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]history.Op(nil), r.ops...)
}

func (r *opRecorder) firstErrors(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range r.ops {
		if o.Err != "" && len(out) < n {
			out = append(out, string(o.Kind)+": "+o.Err)
		}
	}
	return out
}

// waitOps waits until at least n writes are acknowledged.
func waitOps(t *testing.T, r *opRecorder, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for r.okCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes acknowledged after %s", r.okCount(), n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordedWorkload runs acks=all appends (unique ids), upserts (key = id mod
// rollingKeys, value = id, so every upsert writes a value of its own) and lookups of random
// keys, each recorded in the history.
type recordedWorkload struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

const rollingKeys = 500

func startRecordedWorkload(t *testing.T, ctx context.Context, rec *opRecorder, logT, pkT *fluss.Table) *recordedWorkload {
	t.Helper()
	aw, err := logT.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	uw, err := pkT.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	lk, err := pkT.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { aw.Close(); uw.Close() })
	w := &recordedWorkload{stop: make(chan struct{})}
	lookupers := 1
	if v := os.Getenv("STROM_ROLLING_LOOKUPERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("STROM_ROLLING_LOOKUPERS=%q is not a positive number", v)
		}
		lookupers = n
	}
	w.wg.Add(2 + lookupers)
	go func() {
		defer w.wg.Done()
		recordedStream(ctx, rec, w.stop, func(id int64) (history.Op, *fluss.WriteResult, error) {
			o := history.Op{Proc: 1, Kind: history.Append, Key: id, Invoke: rec.now()}
			r, err := aw.Append(ctx, fluss.Row{id, "payload"})
			return o, r, err
		})
	}()
	go func() {
		defer w.wg.Done()
		recordedStream(ctx, rec, w.stop, func(id int64) (history.Op, *fluss.WriteResult, error) {
			o := history.Op{Proc: 2, Kind: history.Upsert, Key: id % rollingKeys, Value: id, Invoke: rec.now()}
			r, err := uw.Upsert(ctx, fluss.Row{id % rollingKeys, id})
			return o, r, err
		})
	}()
	for i := range lookupers {
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				key := rand.Int64N(rollingKeys)
				o := history.Op{Proc: 3 + i, Kind: history.Lookup, Key: key, Invoke: rec.now()}
				lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				row, err := lk.Lookup(lctx, fluss.Row{key})
				cancel()
				o.Return = rec.now()
				switch {
				case err != nil:
					o.Outcome, o.Err = history.Fail, err.Error()
				case row == nil:
					o.Outcome, o.Value = history.OK, history.Absent
				default:
					o.Outcome, o.Value = history.OK, row[1].(int64)
				}
				rec.add(o)
			}
		}()
	}
	return w
}

func (w *recordedWorkload) end() {
	close(w.stop)
	w.wg.Wait()
}

// recordedStream issues writes id = 0, 1, … with up to 256 in flight until stop is closed,
// recording each write's outcome; a write's return time is when its result was waited for,
// which is no earlier than its acknowledgement (a later return only loosens the real-time
// order the checker demands).
func recordedStream(ctx context.Context, rec *opRecorder, stop <-chan struct{}, write func(id int64) (history.Op, *fluss.WriteResult, error)) {
	type inflight struct {
		op history.Op
		r  *fluss.WriteResult
	}
	var pending []inflight
	settle := func(n int) {
		for len(pending) > n {
			p := pending[0]
			pending = pending[1:]
			err := p.r.Wait(ctx)
			p.op.Return = rec.now()
			if err != nil {
				p.op.Outcome, p.op.Err = history.Unknown, err.Error()
			} else {
				p.op.Outcome = history.OK
			}
			rec.add(p.op)
		}
	}
	for id := int64(0); ; id++ {
		select {
		case <-stop:
			settle(0)
			return
		default:
		}
		o, r, err := write(id)
		if err != nil {
			o.Return, o.Outcome, o.Err = rec.now(), history.Unknown, err.Error()
			rec.add(o)
			continue
		}
		pending = append(pending, inflight{o, r})
		settle(256)
	}
}

// waitInSync waits until GET_CLUSTER_HEALTH reports every replica of every bucket in its ISR
// and every bucket with a live leader.
func waitInSync(t *testing.T, ctx context.Context, c *clustertest.Cluster, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last fluss.ClusterHealth
	var lastErr error
	for time.Now().Before(deadline) {
		func() {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			conn, err := fluss.Connect(cctx, fluss.Config{BootstrapServers: c.Bootstrap(), RequestTimeout: 2 * time.Second})
			if err != nil {
				lastErr = err
				return
			}
			defer conn.Close()
			last, lastErr = conn.Admin().GetClusterHealth(cctx)
		}()
		if lastErr == nil && last.Replicas > 0 && last.UnderReplicated() == 0 && last.OfflineBuckets() == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("cluster not back in sync within %s: health %+v, err %v", timeout, last, lastErr)
}

// moveWatch polls the bucket leaders of tables (GET_METADATA, as a client sees them) and
// counts, per restart, how often each bucket's leader changed.
type moveWatch struct {
	c      *clustertest.Cluster
	tables []*fluss.Table

	mu      sync.Mutex
	restart int // index of the current restart; -1 before the first
	victims []int32
	leader  map[watchedBucket]int32
	moves   []map[watchedBucket]int // per restart
	polled  []int                   // metadata answers per restart
	without []map[watchedBucket]int // per restart: answers that named no leader for the bucket
	onDown  []map[watchedBucket]int // per restart: answers that named the stopped node as leader
	// per restart: answers asked for after the stopped node's process exited that named it
	// as leader — the controlled shutdown did not move the bucket
	onExited  []map[watchedBucket]int
	ledBefore []map[watchedBucket]bool // per restart: the buckets the stopped node led at its start
	down      int32                    // the node stopped now; 0 when none
	gone      bool                     // the process of down has exited
	polls     int
	stop      chan struct{}
	finished  chan struct{}
}

func watchMoves(ctx context.Context, c *clustertest.Cluster, tables ...*fluss.Table) *moveWatch {
	w := &moveWatch{c: c, tables: tables, restart: -1, leader: map[watchedBucket]int32{},
		stop: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(w.finished)
		var conn *fluss.Connection
		defer func() {
			if conn != nil {
				conn.Close()
			}
		}()
		for {
			if conn == nil {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				conn, _ = fluss.Connect(cctx, fluss.Config{BootstrapServers: c.Bootstrap(), RequestTimeout: time.Second})
				cancel()
			}
			if conn != nil && !w.poll(ctx, conn) {
				conn.Close()
				conn = nil // the node asked may be the one restarting
			}
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

// poll reads the leaders once; it reports false when metadata could not be read.
func (w *moveWatch) poll(ctx context.Context, conn *fluss.Connection) bool {
	for _, table := range w.tables {
		// Whether the stopped node had exited before this request was sent, for this restart.
		w.mu.Lock()
		restart, gone := w.restart, w.gone
		w.mu.Unlock()
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		leaders, err := conn.Admin().BucketLeaders(pctx, table.Path(), "")
		cancel()
		if err != nil {
			return false
		}
		w.mu.Lock()
		w.polls++
		if w.restart >= 0 {
			w.polled[w.restart]++
		}
		for b := range table.Info().NumBuckets() {
			if _, ok := leaders[b]; !ok && w.restart >= 0 {
				w.without[w.restart][watchedBucket{table.Path().String(), b}]++
			}
		}
		for b, n := range leaders {
			key := watchedBucket{table.Path().String(), b}
			if w.down != 0 && n.ID == w.down {
				w.onDown[w.restart][key]++
				if gone && restart == w.restart {
					w.onExited[w.restart][key]++
				}
			}
			if prev, seen := w.leader[key]; seen && prev != n.ID && w.restart >= 0 {
				w.moves[w.restart][key]++
			}
			w.leader[key] = n.ID
		}
		w.mu.Unlock()
	}
	return true
}

// begin starts counting the moves of the restart of node id.
func (w *moveWatch) begin(id int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.restart++
	w.victims = append(w.victims, id)
	w.moves = append(w.moves, map[watchedBucket]int{})
	w.polled = append(w.polled, 0)
	w.without = append(w.without, map[watchedBucket]int{})
	w.onDown = append(w.onDown, map[watchedBucket]int{})
	w.onExited = append(w.onExited, map[watchedBucket]int{})
	led := map[watchedBucket]bool{}
	for b, l := range w.leader {
		if l == id {
			led[b] = true
		}
	}
	w.ledBefore = append(w.ledBefore, led)
	w.down = id
}

// exited records that the process of the node stopped last has exited.
func (w *moveWatch) exited() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = true
}

// up records that the node stopped last serves again.
func (w *moveWatch) up() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down, w.gone = 0, false
}

func (w *moveWatch) end() {
	close(w.stop)
	<-w.finished
}

// check fails t for a bucket whose leader moved more than once during one restart, and for a
// bucket the stopped node led that its controlled shutdown did not move away: one that
// metadata asked for after the node's exit still named it as leader for, or that did not
// change leader during the restart.
func (w *moveWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.polls == 0 {
		t.Fatal("move watch: no metadata answer at all")
	}
	for i, m := range w.moves {
		total := 0
		for b, n := range m {
			total += n
			if n > 1 {
				t.Errorf("restart %d (node %d): %s bucket %d changed leader %d times", i+1, w.victims[i], b.table, b.bucket, n)
			}
		}
		t.Logf("restart %d (node %d): %d leader moves, %d metadata answers", i+1, w.victims[i], total, w.polled[i])
		// A bucket without a leader means the controlled shutdown did not move it: its leader
		// went down with it and came back (not a move, but a spell without acknowledgements).
		for b, n := range w.onDown[i] {
			t.Logf("restart %d (node %d): %s bucket %d was still led by the stopped node in %d metadata answers", i+1, w.victims[i], b.table, b.bucket, n)
		}
		for b, n := range w.onExited[i] {
			t.Errorf("restart %d (node %d): %s bucket %d was led by the stopped node after its exit in %d metadata answers: the controlled shutdown did not move it", i+1, w.victims[i], b.table, b.bucket, n)
		}
		for b := range w.ledBefore[i] {
			if m[b] == 0 {
				t.Errorf("restart %d (node %d): %s bucket %d, led by the stopped node, did not change leader", i+1, w.victims[i], b.table, b.bucket)
			}
		}
		for b, n := range w.without[i] {
			t.Logf("restart %d (node %d): %s bucket %d had no leader in %d metadata answers", i+1, w.victims[i], b.table, b.bucket, n)
		}
		if w.polled[i] == 0 {
			t.Errorf("restart %d (node %d): no metadata answer, the moves were not watched", i+1, w.victims[i])
		}
	}
}

// markLogs returns the size of every node's log now.
func markLogs(c *clustertest.Cluster) map[int32]int64 {
	marks := map[int32]int64{}
	for _, n := range c.Nodes {
		if fi, err := os.Stat(n.LogPath()); err == nil {
			marks[n.ID] = fi.Size()
		}
	}
	return marks
}

// logSince returns what node n logged after marks.
func logSince(t *testing.T, n *clustertest.Node, marks map[int32]int64) string {
	t.Helper()
	b, err := os.ReadFile(n.LogPath())
	if err != nil {
		t.Fatalf("node %d's log: %v", n.ID, err)
	}
	if off := marks[n.ID]; off <= int64(len(b)) {
		b = b[off:]
	}
	return string(b)
}

// checkControlledShutdown fails t unless the controlled shutdown of the stopped node
// completed: it logged no "controlled shutdown incomplete", and a node that was the active
// coordinator then logged moving the stopped node's leaderships with none remaining (every
// bucket here has three replicas in sync, so every leadership can move). Moves by the
// registration lease's revocation at exit do not count: they come after the node stopped
// serving.
func checkControlledShutdown(t *testing.T, c *clustertest.Cluster, marks map[int32]int64, stopped *clustertest.Node) {
	t.Helper()
	if log := logSince(t, stopped, marks); strings.Contains(log, "controlled shutdown incomplete") {
		t.Errorf("node %d: controlled shutdown incomplete:\n%s", stopped.ID, grepLines(log, "controlled shutdown"))
	}
	done := fmt.Sprintf(" server=%d ", stopped.ID)
	for _, n := range c.Nodes {
		for _, line := range strings.Split(logSince(t, n, marks), "\n") {
			if strings.Contains(line, `msg="controlled shutdown"`) && strings.Contains(line, done) && strings.HasSuffix(strings.TrimSpace(line), "remaining=0") {
				return
			}
		}
	}
	t.Errorf("node %d stopped without a coordinator moving all its leaderships (no controlled shutdown log line with remaining=0)", stopped.ID)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
