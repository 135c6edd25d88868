package tablet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/batchstats"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/logstore"
)

// Unit tests of the services over fakes of their narrow interfaces (services.go): no server,
// no Pebble, at most one log in a temporary directory.

// Every registered key is installed by Server.Register exactly once: a service whose table
// apis() does not bind would register keys that no client could reach.
func TestServerInstallsEveryRegisteredAPIOnce(t *testing.T) {
	s := &Server{produce: &produceService{}, fetch: &fetchService{}, primaryKeys: &kvService{}, bucketInfo: &bucketInfoService{}}
	seen := map[wire.APIKey]int{}
	for _, api := range s.apis() {
		seen[api.key]++
	}
	for key := range registeredKeys {
		if seen[key] != 1 {
			t.Errorf("%s is installed %d times, want once", key, seen[key])
		}
	}
	if len(seen) != len(registeredKeys) {
		t.Errorf("apis() installs %d keys, %d are registered", len(seen), len(registeredKeys))
	}
}

// replicasOf is a replicaLookup and replicaHolder over a fixed set of replicas.
type replicasOf map[cluster.Bucket]*Replica

func (m replicasOf) replica(b cluster.Bucket) (*Replica, error) {
	if r, ok := m[b]; ok && r.IsLeader() {
		return r, nil
	}
	return nil, ferr.New(ferr.UnknownTableOrBucketException, "Unknown table or bucket: %s", b)
}

func (m replicasOf) hosted(b cluster.Bucket) *Replica { return m[b] }

func (m replicasOf) Replicas() []*Replica {
	out := make([]*Replica, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	return out
}

// followerFetchesSeen records the follower fetches handed to the leader side.
type followerFetchesSeen struct{ followers []int32 }

func (f *followerFetchesSeen) serveFollowerFetch(req *wire.Request, r *flusspb.FetchLogRequest) (proto.Message, error) {
	f.followers = append(f.followers, r.GetFollowerServerId())
	return &flusspb.FetchLogResponse{}, nil
}

// tables is a cluster.Catalog of a few tables; the lookups the services do not use panic.
type tables struct {
	cluster.Catalog
	byID map[int64]*cluster.TableInfo
}

func (c tables) TableByID(id int64) (*cluster.TableInfo, bool) {
	t, ok := c.byID[id]
	return t, ok
}

func request(t *testing.T, msg proto.Message) *wire.Request {
	t.Helper()
	body, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return &wire.Request{Body: body, Listener: "FLUSS"}
}

// fetchService hands a fetch carrying follower_server_id to the leader side, and answers a
// client's fetch itself, bucket by bucket, with what replicaLookup says.
func TestFetchServiceRoutesFollowerFetchesToTheLeaderSide(t *testing.T) {
	followers := &followerFetchesSeen{}
	s := &fetchService{opts: fetchOptions{Catalog: tables{byID: map[int64]*cluster.TableInfo{}}},
		replicaLookup: replicasOf{}, followerFetches: followers}
	fetch := func(follower int32) *flusspb.FetchLogRequest {
		return &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(follower), MaxBytes: proto.Int32(1 << 20),
			TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(7), ProjectionPushdownEnabled: proto.Bool(false),
				BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1 << 20)}}}}}
	}

	if _, err := s.handleFetchLog(context.Background(), request(t, fetch(3))); err != nil {
		t.Fatal(err)
	}
	if len(followers.followers) != 1 || followers.followers[0] != 3 {
		t.Fatalf("follower fetches handed over: %v, want [3]", followers.followers)
	}

	resp, err := s.handleFetchLog(context.Background(), request(t, fetch(-1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(followers.followers) != 1 {
		t.Fatalf("a client fetch went to the leader side: %v", followers.followers)
	}
	fr := resp.(*fetchResponse)
	defer fr.Release()
	bo := fr.TablesResp[0].BucketsResp[0]
	if got := ferr.Code(bo.GetErrorCode()); got != ferr.UnknownTableOrBucketException {
		t.Fatalf("client fetch of a bucket not held: error %v, want UNKNOWN_TABLE_OR_BUCKET", got)
	}
}

// admissionSeen is a writeAdmission that records its calls and refuses with err.
type admissionSeen struct {
	calls int
	err   error
}

func (a *admissionSeen) admitWrite(rep *Replica, acks int32) (<-chan struct{}, error) {
	a.calls++
	return make(chan struct{}), a.err
}

type noStats struct{}

func (noStats) noteAppended(*Replica, []record.Batch, []*batchstats.Batch) {}

// produceService asks writeAdmission only for replicated buckets, refuses primary-key tables
// before anything is appended, and passes replicaLookup's refusal on.
func TestProduceServiceAdmission(t *testing.T) {
	b := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	pk := &cluster.TableInfo{ID: 1, Descriptor: metadata.TableDescriptor{Schema: metadata.Schema{PrimaryKey: []string{"id"}}}}
	refused := ferr.New(ferr.NotEnoughReplicasException, "too few in sync")
	for _, c := range []struct {
		name      string
		replicas  replicasOf
		wantCode  ferr.Code
		wantAdmit int
	}{
		{"not held", replicasOf{}, ferr.UnknownTableOrBucketException, 0},
		{"standalone primary-key table", replicasOf{b: {Bucket: b, Table: pk}}, ferr.UnknownServerError, 0},
		{"replicated, refused", replicasOf{b: {Bucket: b, Table: pk, repl: leadingState()}}, ferr.NotEnoughReplicasException, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			admit := &admissionSeen{err: refused}
			s := &produceService{replicaLookup: c.replicas, writeAdmission: admit, statsRecorder: noStats{}}
			_, _, err := s.appendBucket(context.Background(), b, nil, 0, -1, defaultRequestTimeout)
			if got := ferr.CodeOf(err); got != c.wantCode {
				t.Errorf("error %v (%v), want code %v", got, err, c.wantCode)
			}
			if admit.calls != c.wantAdmit {
				t.Errorf("admitWrite called %d times, want %d", admit.calls, c.wantAdmit)
			}
		})
	}
}

func leadingState() *replState {
	rs := newReplState()
	rs.leading.Store(true)
	return rs
}

// leadership admits a write only while leading, with a current membership, and for acks=-1
// with at least min ISR members.
func TestLeadershipAdmitWrite(t *testing.T) {
	b := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	valid := true
	s := &leadership{opts: leadershipOptions{ServerID: 1}, minISR: 2,
		membership: membership{opts: membershipOptions{ServerID: 1, MembershipValid: func() bool { return valid }}}}
	rep := &Replica{Bucket: b, repl: newReplState()}
	rep.repl.state = cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}}

	if _, err := s.admitWrite(rep, 1); ferr.CodeOf(err) != ferr.NotLeaderOrFollower {
		t.Errorf("not leading: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	rep.repl.leading.Store(true)
	if fence, err := s.admitWrite(rep, 1); err != nil || fence != rep.repl.fence {
		t.Errorf("acks=1 while leading: fence %v, err %v; want the leadership's fence", fence, err)
	}
	if _, err := s.admitWrite(rep, -1); ferr.CodeOf(err) != ferr.NotEnoughReplicasException {
		t.Errorf("acks=-1 with ISR [1] and min ISR 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	rep.repl.state.ISR = []int32{1, 2}
	if _, err := s.admitWrite(rep, -1); err != nil {
		t.Errorf("acks=-1 with ISR [1 2]: %v", err)
	}
	valid = false
	if _, err := s.admitWrite(rep, 1); ferr.CodeOf(err) != ferr.NotLeaderOrFollower {
		t.Errorf("membership lease not current: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}

// kvService reads a replicated bucket only while it leads it with a current membership; a
// standalone bucket is always readable.
func TestKVServiceReadable(t *testing.T) {
	b := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	valid := true
	s := &kvService{membership: membership{opts: membershipOptions{ServerID: 1, MembershipValid: func() bool { return valid }}}}
	standalone := &Replica{Bucket: b}
	replicated := &Replica{Bucket: b, repl: newReplState()}
	if err := s.readable(standalone); err != nil {
		t.Errorf("standalone: %v", err)
	}
	if err := s.readable(replicated); ferr.CodeOf(err) != ferr.NotLeaderOrFollower {
		t.Errorf("replicated, not leading: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	replicated.repl.leading.Store(true)
	if err := s.readable(replicated); err != nil {
		t.Errorf("replicated, leading: %v", err)
	}
	valid = false
	if err := s.readable(replicated); ferr.CodeOf(err) != ferr.NotLeaderOrFollower {
		t.Errorf("membership lease not current: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if err := s.readable(standalone); err != nil {
		t.Errorf("standalone with the lease not current (the single node has none): %v", err)
	}
}

// remoteStart is a RemoteLog whose buckets' remote logs all start at start (ok false when
// start < 0).
type remoteStart struct {
	RemoteLog
	start int64
}

func (r remoteStart) LogStartOffset(context.Context, *cluster.TableInfo, *cluster.PartitionInfo, cluster.Bucket) (int64, bool) {
	return r.start, r.start >= 0
}

// tieredLog reports the remote log start only when it is below the local one.
func TestTieredLogStart(t *testing.T) {
	l, err := logstore.Open(context.Background(), t.TempDir(), logstore.Options{InitialOffset: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rep := &Replica{Bucket: cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition}, Table: &cluster.TableInfo{ID: 1}, Log: l}
	for _, c := range []struct {
		name   string
		remote RemoteLog
		want   int64
	}{
		{"no remote storage", nil, 100},
		{"nothing tiered", remoteStart{start: -1}, 100},
		{"tiered below the local start", remoteStart{start: 40}, 40},
		{"remote start above the local one", remoteStart{start: 150}, 100},
	} {
		s := tieredLog{opts: tieredLogOptions{RemoteLog: c.remote}}
		if got := s.logStart(rep); got != c.want {
			t.Errorf("%s: log start %d, want %d", c.name, got, c.want)
		}
	}
}

// bucketInfoService answers LIST_OFFSETS per bucket with replicaLookup's refusal.
func TestBucketInfoListOffsetsPerBucketErrors(t *testing.T) {
	s := &bucketInfoService{opts: bucketInfoOptions{Now: time.Now}, replicaLookup: replicasOf{}}
	resp, err := s.handleListOffsets(context.Background(), request(t, &flusspb.ListOffsetsRequest{TableId: proto.Int64(1),
		BucketId: []int32{0, 1}, OffsetType: proto.Int32(offsetTypeLatest), FollowerServerId: proto.Int32(-1)}))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*flusspb.ListOffsetsResponse)
	if len(r.BucketsResp) != 2 {
		t.Fatalf("%d bucket answers, want 2", len(r.BucketsResp))
	}
	for _, bo := range r.BucketsResp {
		if ferr.Code(bo.GetErrorCode()) != ferr.UnknownTableOrBucketException || bo.Offset != nil {
			t.Errorf("bucket %d: code %d offset %v, want UNKNOWN_TABLE_OR_BUCKET and no offset", bo.GetBucketId(), bo.GetErrorCode(), bo.Offset)
		}
	}
}

// rolesSeen is a bucketRoles that records what replicaManager hands to the two sides and,
// as they do, records the state in the bucket's replState.
type rolesSeen struct{ calls []string }

func (r *rolesSeen) becomeLeader(_ context.Context, rep *Replica, st cluster.BucketState) error {
	r.calls = append(r.calls, fmt.Sprintf("lead epoch %d", st.LeaderEpoch))
	rep.repl.state, rep.repl.known = st, true
	return nil
}

func (r *rolesSeen) becomeFollower(rep *Replica, st cluster.BucketState) error {
	r.calls = append(r.calls, fmt.Sprintf("follow %d epoch %d", st.Leader, st.LeaderEpoch))
	rep.repl.state, rep.repl.known = st, true
	return nil
}

func (r *rolesSeen) stopLeading(*Replica)   { r.calls = append(r.calls, "stop leading") }
func (r *rolesSeen) stopFollowing(*Replica) { r.calls = append(r.calls, "stop following") }
func (r *rolesSeen) awaitISRChanges()       {}
func (r *rolesSeen) stopFetchers()          {}

// replicaManager opens a replicated bucket and hands it to the side its state names, ignores
// states not newer than the one it holds, and stops and deletes the replica once a state no
// longer lists this server. A standalone bucket never reaches the two sides.
func TestReplicaManagerAppliesBucketStates(t *testing.T) {
	dir := t.TempDir()
	roles := &rolesSeen{}
	table := &cluster.TableInfo{ID: 1, Descriptor: metadata.TableDescriptor{BucketCount: 2}}
	s := &replicaManager{opts: replicaManagerOptions{DataDir: dir, ServerID: 1, Now: time.Now,
		Catalog: tables{byID: map[int64]*cluster.TableInfo{1: table}}, Replication: struct{ cluster.ReplicationControl }{}},
		log: slog.New(slog.DiscardHandler), replicas: map[cluster.Bucket]*Replica{},
		standalone: map[cluster.Bucket]cluster.BucketState{}, bucketRoles: roles}
	b := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	apply := func(st cluster.BucketState) {
		t.Helper()
		if err := s.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: table, Bucket: b, State: st}}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(calls ...string) {
		t.Helper()
		if !slices.Equal(roles.calls, calls) {
			t.Fatalf("calls %q, want %q", roles.calls, calls)
		}
		roles.calls = nil
	}

	apply(cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}, LeaderEpoch: 3})
	want("lead epoch 3")
	if s.hosted(b) == nil {
		t.Fatal("the led bucket is not held")
	}
	apply(cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}, LeaderEpoch: 3})
	want() // not newer
	apply(cluster.BucketState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{2}, LeaderEpoch: 4})
	want("follow 2 epoch 4")
	apply(cluster.BucketState{Replicas: []int32{2, 3}, Leader: 2, ISR: []int32{2}, LeaderEpoch: 5})
	want("stop following", "stop leading")
	if s.hosted(b) != nil {
		t.Fatal("a bucket whose state no longer lists this server is still held")
	}
	if _, err := os.Stat(bucketDir(dir, b)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("its directory is left: %v", err)
	}

	standalone := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 1}
	if err := s.ApplyBucketStates(context.Background(), []cluster.BucketUpdate{{Table: table, Bucket: standalone,
		State: cluster.BucketState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}}}}); err != nil {
		t.Fatal(err)
	}
	want()
	if rep, err := s.replica(standalone); err != nil || rep.repl != nil {
		t.Fatalf("standalone bucket: %v, %v; want a replica without replication state", rep, err)
	}
	if epoch, leading := s.LeaderEpoch(standalone); !leading || epoch != 0 {
		t.Fatalf("standalone leader epoch %d leading %v, want 0 true", epoch, leading)
	}
	for _, r := range s.Replicas() {
		r.Log.Close()
	}
}
