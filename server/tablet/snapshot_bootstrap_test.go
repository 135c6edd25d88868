package tablet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/tablet"
)

// memSnapshot is a KV snapshot held in memory: a copy of a leader's state at an offset.
type memSnapshot struct {
	mu     sync.Mutex
	offset int64
	keys   [][]byte
	values [][]byte
	taken  bool
}

// take copies kv's applied state.
func (m *memSnapshot) take(t *testing.T, kv *kvstore.Tablet) {
	t.Helper()
	v, err := kv.OpenStateView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	it, err := v.Iter()
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys, m.values = nil, nil
	for ; it.Valid(); it.Next() {
		m.keys = append(m.keys, slices.Clone(it.Key()))
		m.values = append(m.values, slices.Clone(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	m.offset, m.taken = v.Offset, true
}

func (m *memSnapshot) OpenLatestState(context.Context, cluster.Bucket) (kvstore.SnapshotRows, int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.taken {
		return nil, 0, false, nil
	}
	return &sliceRows{keys: m.keys, values: m.values}, m.offset, true, nil
}

// floor keeps the changelog from the snapshot's offset (everything without a snapshot).
func (m *memSnapshot) floor(cluster.Bucket) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}

type sliceRows struct {
	keys, values [][]byte
	i            int
}

func (r *sliceRows) Valid() bool   { return r.i < len(r.keys) }
func (r *sliceRows) Key() []byte   { return r.keys[r.i] }
func (r *sliceRows) Value() []byte { return r.values[r.i] }
func (r *sliceRows) Next()         { r.i++ }
func (r *sliceRows) Err() error    { return nil }
func (r *sliceRows) Close() error  { return nil }

// trimmedPK is two servers replicating a PK table (id 1) with a 1 ms changelog TTL: server 2
// is down from the start; upserts, a snapshot of the leader's state, more upserts, and the
// leader's retention removes changelog server 2 lacks.
type trimmedPK struct {
	c     *rcluster
	snap  *memSnapshot
	tbl   *cluster.TableInfo
	want  map[int64]string
	seq   int32
	start int64 // the leader's log start after retention
}

func newTrimmedPK(t *testing.T) *trimmedPK {
	c := newRCluster(t, 2, 1, time.Minute)
	p := &trimmedPK{c: c, snap: &memSnapshot{}, want: map[int64]string{}}
	c.snapshots, c.floor = p.snap, p.snap.floor
	c.segmentBytes = 512
	c.stop(1)
	c.start(1) // small segments, the snapshot source and the floor on the leader
	c.stop(2)  // down from the start: a replica with an empty log, as a new one
	p.tbl = c.tableWith(1, true, map[string]string{metadata.PropLogTTL: "1ms"})
	c.elect(1, []int32{1, 2}, 1, []int32{1})
	p.write(t, 0, 40, "a")
	p.snap.take(t, c.replica(1, 1).KV)
	p.write(t, 40, 60, "b") // after the snapshot: the follower must fetch these
	// A restart makes the leader's Pebble state durable up to its log end (recovery), so
	// retention may remove changelog segments below the snapshot's offset.
	c.stop(1)
	c.start(1)
	leader := c.replica(1, 1).Log
	if _, err := leader.Retention().DeleteExpiredSegments(time.Now().Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	p.start = leader.LogStartOffset()
	if p.start == 0 || p.start > p.snap.offset {
		t.Fatalf("leader log start %d after retention, snapshot offset %d", p.start, p.snap.offset)
	}
	return p
}

// write upserts rows from..to-1 (and one of seven small keys each time) through server 1.
func (p *trimmedPK) write(t *testing.T, from, to int64, tag string) {
	t.Helper()
	for i := from; i < to; i++ {
		rows := map[int64]string{i: fmt.Sprint(tag, i), i % 7: fmt.Sprint(tag, "-", i)}
		if r := upsert(t, p.c.nodes[1].client, 1, -1, 5, p.seq, rows); r.GetErrorCode() != 0 {
			t.Fatalf("upsert: %d %s", r.GetErrorCode(), r.GetErrorMessage())
		}
		p.seq++
		for k, v := range rows {
			p.want[k] = v
		}
	}
}

// rejoinAndServe starts server 2, waits until it is in the ISR with the leader's whole log
// applied, promotes it and checks that its lookups return every acknowledged upsert.
func (p *trimmedPK) rejoinAndServe(t *testing.T) {
	t.Helper()
	c := p.c
	c.start(2)
	waitFor(t, "server 2 in the ISR", func() bool { return slices.Contains(c.ctl.state(bucket0(1)).ISR, 2) })
	f := c.replica(2, 1)
	if f.Log.LogStartOffset() != p.snap.offset {
		t.Errorf("follower log starts at %d, want the snapshot's offset %d", f.Log.LogStartOffset(), p.snap.offset)
	}
	p.write(t, 60, 70, "c")
	leader := c.replica(1, 1).Log
	waitFor(t, "the follower to apply the leader's log", func() bool {
		return f.KV.AppliedOffset() == leader.LogEndOffset() && f.Log.LogEndOffset() == leader.LogEndOffset()
	})
	c.elect(1, []int32{1, 2}, 2, []int32{1, 2})
	ids := make([]int64, 0, len(p.want))
	for k := range p.want {
		ids = append(ids, k)
	}
	got, code := lookupNames(t, c.nodes[2].client, 1, ids...)
	if code != ferr.None {
		t.Fatalf("lookup on the promoted follower: code %d", code)
	}
	for i, id := range ids {
		if got[i] != p.want[id] {
			t.Errorf("key %d = %q, want %q", id, got[i], p.want[id])
		}
	}
}

// A primary-key follower that was down while its leader's retention removed the changelog it
// lacks bootstraps from the bucket's latest KV snapshot: it loads the snapshot's rows, fetches
// the changelog from the snapshot's offset, joins the ISR, and once promoted serves every
// acknowledged upsert by lookup. Without the bootstrap it stays behind for good: the leader
// answers each of its fetches with LOG_OFFSET_OUT_OF_RANGE.
func TestPKFollowerBehindTheLeadersLogStartBootstrapsFromSnapshot(t *testing.T) {
	p := newTrimmedPK(t)
	if !tablet.NeedsSnapshotBootstrap(p.tbl, 0, p.start) || tablet.NeedsSnapshotBootstrap(p.tbl, p.start, p.start) {
		t.Fatal("NeedsSnapshotBootstrap: a replica below the leader's log start needs one, one at it does not")
	}
	if need, err := p.c.nodes[1].srv.ReplicaNeedsSnapshotBootstrap(bucket0(1), 0); err != nil || !need {
		t.Fatalf("leader: replica at 0 needs bootstrap = %v, %v", need, err)
	}
	p.rejoinAndServe(t)
}

// A bootstrap interrupted by a crash after the snapshot's rows were loaded and before the new
// log was created leaves state its changelog cannot back (the state opens offline). The
// restarted replica's log is still below the leader's log start, so its first fetch is out of
// range again and the bootstrap runs again, replacing the state.
func TestInterruptedSnapshotBootstrapRunsAgain(t *testing.T) {
	p := newTrimmedPK(t)
	dir := p.c.nodes[2].dir
	b := bucket0(1)
	// What the crash left: the rows loaded at the snapshot's offset, the log gone.
	kv, err := kvstore.Open(filepath.Join(dir, "kv"), kvstore.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	rows, off, _, _ := p.snap.OpenLatestState(context.Background(), b)
	if _, err := kv.LoadBucket(context.Background(), b, off, rows); err != nil {
		t.Fatal(err)
	}
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	bdir := filepath.Join(dir, "table-1", "bucket-0")
	if err := os.RemoveAll(bdir); err != nil {
		t.Fatal(err)
	}
	p.rejoinAndServe(t)
}
