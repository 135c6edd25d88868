package tablet_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/tablet"
)

// fakeControl is an in-memory cluster.ReplicationControl: bucket states and lineages in maps,
// compare-and-swap on (LeaderEpoch, BucketEpoch) as the etcd implementation does.
type fakeControl struct {
	mu       sync.Mutex
	states   map[cluster.Bucket]cluster.BucketState
	lineages map[cluster.Bucket]cluster.Lineage
	addrs    map[int32]string
}

func newFakeControl() *fakeControl {
	return &fakeControl{states: map[cluster.Bucket]cluster.BucketState{}, lineages: map[cluster.Bucket]cluster.Lineage{}, addrs: map[int32]string{}}
}

func (c *fakeControl) AdjustISR(_ context.Context, b cluster.Bucket, expect cluster.BucketState, isr []int32) (cluster.BucketState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.states[b]
	if cur.LeaderEpoch != expect.LeaderEpoch || cur.BucketEpoch != expect.BucketEpoch {
		return cluster.BucketState{}, ferr.New(ferr.FencedLeaderEpochException, "stale state")
	}
	if !slices.Contains(isr, cur.Leader) {
		return cluster.BucketState{}, ferr.New(ferr.InvalidUpdateVersionException, "ISR %v without leader", isr)
	}
	cur.ISR = slices.Clone(isr)
	cur.BucketEpoch++
	c.states[b] = cur
	return cur, nil
}

func (c *fakeControl) PublishLineage(_ context.Context, b cluster.Bucket, l cluster.Lineage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.states[b].LeaderEpoch != l.LeaderEpoch {
		return ferr.New(ferr.FencedLeaderEpochException, "stale lineage")
	}
	c.lineages[b] = l
	return nil
}

func (c *fakeControl) Lineage(_ context.Context, b cluster.Bucket) (cluster.Lineage, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lineages[b]
	return l, ok, nil
}

func (c *fakeControl) ReplicationAddr(id int32) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.addrs[id]
	return a, ok
}

func (c *fakeControl) state(b cluster.Bucket) cluster.BucketState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.states[b]
}

// fakeCatalog serves the tables of a test.
type fakeCatalog struct {
	mu     sync.Mutex
	tables map[int64]*cluster.TableInfo
}

func (c *fakeCatalog) TableByID(id int64) (*cluster.TableInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tables[id]
	return t, ok
}
func (c *fakeCatalog) TableByPath(cluster.TablePath) (*cluster.TableInfo, bool) { return nil, false }
func (c *fakeCatalog) Schema(tableID int64, schemaID int32) (metadata.Schema, bool) {
	t, ok := c.TableByID(tableID)
	if !ok || schemaID != t.SchemaID {
		return metadata.Schema{}, false
	}
	return t.Descriptor.Schema, true
}
func (c *fakeCatalog) PartitionByID(int64) (*cluster.PartitionInfo, bool) { return nil, false }
func (c *fakeCatalog) PartitionByName(int64, string) (*cluster.PartitionInfo, bool) {
	return nil, false
}
func (c *fakeCatalog) Partitions(int64) []*cluster.PartitionInfo { return nil }

type counterIDs struct{ n atomic.Int64 }

func (c *counterIDs) NextID(context.Context, string) (int64, error) { return c.n.Add(1), nil }

// rnode is one tablet server of a test cluster: an internal listener ("FLUSS", where
// followers fetch) and a client listener ("CLIENT").
type rnode struct {
	id       int32
	dir      string
	srv      *tablet.Server
	cancel   context.CancelFunc
	done     sync.WaitGroup
	internal *wire.ClientConn // a client on the internal listener
	client   *wire.ClientConn // a client on the client listener
}

// rcluster is a set of in-process tablet servers replicating through a fakeControl.
type rcluster struct {
	t      testing.TB
	ctl    *fakeControl
	cat    *fakeCatalog
	ids    counterIDs
	nodes  map[int32]*rnode
	minISR int
	maxLag time.Duration
	// segmentBytes, when set, is log.segment.file-size of servers started afterwards.
	segmentBytes int64
	// snapshots and floor, when set, are the KV snapshots and retention floor of servers
	// started afterwards.
	snapshots tablet.SnapshotSource
	floor     func(cluster.Bucket) int64
	// membership, when set, is Options.MembershipValid of servers started afterwards.
	membership func() bool
}

func newRCluster(t testing.TB, n int, minISR int, maxLag time.Duration) *rcluster {
	c := &rcluster{t: t, ctl: newFakeControl(), cat: &fakeCatalog{tables: map[int64]*cluster.TableInfo{}},
		nodes: map[int32]*rnode{}, minISR: minISR, maxLag: maxLag}
	for id := int32(1); id <= int32(n); id++ {
		c.nodes[id] = &rnode{id: id, dir: t.TempDir()}
		c.start(id)
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.stop(id)
		}
	})
	return c
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// start (re)starts server id over its data directory and re-applies the stored states of
// the buckets it holds a replica of.
func (c *rcluster) start(id int32) {
	t := c.t
	n := c.nodes[id]
	cfg := config.Default()
	if c.segmentBytes > 0 {
		cfg.LogSegmentBytes = c.segmentBytes
	}
	srv, err := tablet.New(tablet.Options{DataDir: n.dir, ServerID: id, Catalog: c.cat, IDs: &c.ids, Config: cfg,
		InternalListener: "FLUSS", Replication: c.ctl, MinInSyncReplicas: c.minISR, ReplicaMaxLag: c.maxLag,
		Snapshots: c.snapshots, RetentionFloor: c.floor, MembershipValid: c.membership}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	svc := wire.NewService(2)
	srv.Register(svc)
	ctx, cancel := context.WithCancel(context.Background())
	n.srv, n.cancel = srv, cancel
	listen := func(name string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n.done.Add(1)
		go func() {
			defer n.done.Done()
			_ = wire.Serve(ctx, ln, svc, wire.ListenerConfig{Name: name}, quiet())
		}()
		return ln.Addr().String()
	}
	internalAddr, clientAddr := listen("FLUSS"), listen("CLIENT")
	c.ctl.mu.Lock()
	c.ctl.addrs[id] = internalAddr
	c.ctl.mu.Unlock()
	if n.internal, err = wire.Dial(ctx, internalAddr, wire.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	if n.client, err = wire.Dial(ctx, clientAddr, wire.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	var updates []cluster.BucketUpdate
	c.ctl.mu.Lock()
	for b, st := range c.ctl.states {
		if st.IsReplica(id) {
			tbl, _ := c.cat.TableByID(b.TableID)
			updates = append(updates, cluster.BucketUpdate{Table: tbl, Bucket: b, State: st})
		}
	}
	c.ctl.mu.Unlock()
	if err := srv.ApplyBucketStates(context.Background(), updates); err != nil {
		t.Fatal(err)
	}
}

// stop closes server id (as a crash would leave it unreachable; its data stays).
func (c *rcluster) stop(id int32) {
	n := c.nodes[id]
	if n.srv == nil {
		return
	}
	c.ctl.mu.Lock()
	delete(c.ctl.addrs, id)
	c.ctl.mu.Unlock()
	n.internal.Close()
	n.client.Close()
	n.cancel()
	n.done.Wait()
	if err := n.srv.Close(); err != nil {
		c.t.Error(err)
	}
	n.srv = nil
}

// table registers a one-bucket table: a log table (INDEXED rows of one INT) or a primary-key
// table (id BIGINT, name STRING).
func (c *rcluster) table(id int64, pk bool) *cluster.TableInfo {
	c.t.Helper()
	return c.tableWith(id, pk, nil)
}

// tableWith is table with extra table properties.
func (c *rcluster) tableWith(id int64, pk bool, props map[string]string) *cluster.TableInfo {
	c.t.Helper()
	d := metadata.TableDescriptor{
		Schema:           metadata.Schema{Columns: []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.Int}}}},
		BucketCount:      1,
		Properties:       map[string]string{metadata.PropLogFormat: "INDEXED"},
		CustomProperties: map[string]string{},
	}
	if pk {
		d.Schema = metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}},
			{Name: "name", Type: metadata.DataType{Root: metadata.String}},
		}, PrimaryKey: []string{"id"}}
		d.Properties = map[string]string{}
	}
	for k, v := range props {
		d.Properties[k] = v
	}
	d.Schema.AssignFieldIDs()
	out, err := metadata.PrepareCreateTable(&d, metadata.ClusterDefaults{})
	if err != nil {
		c.t.Fatal(err)
	}
	ti := &cluster.TableInfo{Path: cluster.TablePath{Database: "fluss", Table: fmt.Sprint("t", id)}, ID: id, SchemaID: 1, Descriptor: out}
	c.cat.mu.Lock()
	c.cat.tables[id] = ti
	c.cat.mu.Unlock()
	return ti
}

func bucket0(table int64) cluster.Bucket {
	return cluster.Bucket{TableID: table, PartitionID: cluster.NoPartition, Bucket: 0}
}

// elect stores a new leadership of bucket 0 of table (leader epoch and bucket epoch
// incremented) and applies it to every running replica, the leader first.
func (c *rcluster) elect(table int64, replicas []int32, leader int32, isr []int32) cluster.BucketState {
	c.t.Helper()
	b := bucket0(table)
	c.ctl.mu.Lock()
	st := c.ctl.states[b]
	st = cluster.BucketState{Replicas: replicas, Leader: leader, ISR: isr, LeaderEpoch: st.LeaderEpoch + 1, BucketEpoch: st.BucketEpoch + 1}
	c.ctl.states[b] = st
	c.ctl.mu.Unlock()
	tbl, _ := c.cat.TableByID(table)
	order := append([]int32{leader}, without(replicas, leader)...)
	for _, id := range order {
		if n := c.nodes[id]; n.srv != nil {
			if err := n.srv.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: tbl, Bucket: b, State: st}}); err != nil {
				c.t.Fatalf("apply %+v to %d: %v", st, id, err)
			}
		}
	}
	return st
}

func without(ids []int32, id int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(x int32) bool { return x == id })
}

func (c *rcluster) replica(id int32, table int64) *tablet.Replica {
	for _, r := range c.nodes[id].srv.Replicas() {
		if r.Bucket == bucket0(table) {
			return r
		}
	}
	return nil
}

// logBytes returns every byte of server id's log of bucket 0, and its HW and LEO.
func (c *rcluster) logBytes(id int32, table int64) (data []byte, hw, leo int64) {
	c.t.Helper()
	data, hw, leo, err := c.tryLogBytes(id, table)
	if err != nil {
		c.t.Fatal(err)
	}
	return data, hw, leo
}

// tryLogBytes is logBytes that reports errors (a read may race a follower's truncation).
func (c *rcluster) tryLogBytes(id int32, table int64) (data []byte, hw, leo int64, err error) {
	r := c.replica(id, table)
	if r == nil {
		return nil, 0, 0, fmt.Errorf("server %d holds no replica of table %d", id, table)
	}
	hw, leo = r.Log.HighWatermark(), r.Log.LogEndOffset()
	res, err := r.Log.Replica().ReadReplica(r.Log.LogStartOffset(), 1<<30, true)
	if err != nil {
		return nil, 0, 0, err
	}
	defer res.Release()
	data, err = res.AppendTo(nil)
	return data, hw, leo, err
}

// waitFor polls cond until it holds (5 s at most).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitInSync waits until every listed server's log of table equals the first one's, byte for
// byte, with the same HW and log end.
func (c *rcluster) waitInSync(table int64, ids ...int32) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("servers %v to agree on table %d", ids, table), func() bool {
		d0, hw0, leo0, err := c.tryLogBytes(ids[0], table)
		if err != nil || hw0 != leo0 {
			return false
		}
		for _, id := range ids[1:] {
			d, hw, leo, err := c.tryLogBytes(id, table)
			if err != nil || hw != hw0 || leo != leo0 || !bytes.Equal(d, d0) {
				return false
			}
		}
		return true
	})
}

// produceTo sends one PRODUCE_LOG of records to bucket 0 and returns the bucket's answer.
func produceTo(t testing.TB, conn *wire.ClientConn, table int64, acks int32, timeoutMs int32, records []byte) *flusspb.PbProduceLogRespForBucket {
	t.Helper()
	var resp flusspb.ProduceLogResponse
	req := &flusspb.ProduceLogRequest{Acks: proto.Int32(acks), TableId: proto.Int64(table), TimeoutMs: proto.Int32(timeoutMs),
		BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(0), Records: records}}}
	if err := conn.Call(context.Background(), wire.ProduceLog, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.BucketsResp[0]
}

// writerBatch is rowBatch(n) of an idempotent writer.
func writerBatch(n int32, writer int64, seq int32) []byte {
	var recs []byte
	for i := int32(0); i < n; i++ {
		recs = record.AppendRowLogRecord(recs, record.AppendOnly, []byte{0, byte(i + seq)})
	}
	return record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: writer, BatchSequence: seq, RecordCount: n}, recs)
}

var pkTypes = []metadata.DataType{{Root: metadata.BigInt, NotNull: true}, {Root: metadata.String}}

func pkKey(t testing.TB, id int64) []byte {
	k, err := row.EncodeKey(nil, pkTypes[:1], []row.Datum{{I: id}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// upsert writes rows id -> name to bucket 0 of a PK table and returns the bucket's answer.
func upsert(t testing.TB, conn *wire.ClientConn, table int64, acks int32, writer int64, seq int32, rows map[int64]string) *flusspb.PbPutKvRespForBucket {
	t.Helper()
	var recs []record.KvRecord
	for id, name := range rows {
		val, err := row.AppendCompactedRow(nil, pkTypes, []row.Datum{{I: id}, {B: []byte(name)}})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, record.KvRecord{Key: pkKey(t, id), Row: val})
	}
	batch := record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: writer, BatchSequence: seq}, recs...)
	var resp flusspb.PutKvResponse
	req := &flusspb.PutKvRequest{Acks: proto.Int32(acks), TableId: proto.Int64(table), TimeoutMs: proto.Int32(10000),
		BucketsReq: []*flusspb.PbPutKvReqForBucket{{BucketId: proto.Int32(0), Records: batch}}}
	if err := conn.Call(context.Background(), wire.PutKv, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.BucketsResp[0]
}

// lookupNames looks up ids on bucket 0 and returns the names found ("" for a missing key),
// or the bucket's error code.
func lookupNames(t *testing.T, conn *wire.ClientConn, table int64, ids ...int64) ([]string, ferr.Code) {
	t.Helper()
	req := &flusspb.LookupRequest{TableId: proto.Int64(table), BucketsReq: []*flusspb.PbLookupReqForBucket{{BucketId: proto.Int32(0)}}}
	for _, id := range ids {
		req.BucketsReq[0].Keys = append(req.BucketsReq[0].Keys, pkKey(t, id))
	}
	var resp flusspb.LookupResponse
	if err := conn.Call(context.Background(), wire.Lookup, req, &resp); err != nil {
		t.Fatal(err)
	}
	b := resp.BucketsResp[0]
	if b.ErrorCode != nil {
		return nil, ferr.Code(b.GetErrorCode())
	}
	out := make([]string, len(b.Values))
	for i, v := range b.Values {
		if v.Values == nil {
			continue
		}
		_, rb, err := row.SplitValue(v.Values)
		if err != nil {
			t.Fatal(err)
		}
		d, err := row.DecodeCompactedRow(pkTypes, rb, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(d[1].B)
	}
	return out, ferr.None
}
