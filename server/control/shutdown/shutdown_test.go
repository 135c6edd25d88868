package shutdown

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/control/internal/statetext"
	"github.com/stromdb/strom/server/control/peers"
	"github.com/stromdb/strom/server/meta"
)

// TestPlan runs testdata/plan: "plan server=ID live=IDS epoch=N" over the input states
// prints the moved states, the buckets that remain with the server, and Movable.
func TestPlan(t *testing.T) {
	datadriven.RunTest(t, "testdata/plan", func(t *testing.T, td *datadriven.TestData) string {
		var server, epoch int64
		var liveText string
		td.ScanArgs(t, "server", &server)
		td.ScanArgs(t, "live", &liveText)
		td.ScanArgs(t, "epoch", &epoch)
		live, err := statetext.ParseIDs(liveText)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		states, err := statetext.ParseStates(td.Input)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		moves, remaining := Plan(states, int32(server), statetext.Live(live), epoch)
		var out strings.Builder
		for _, b := range statetext.Buckets(moves) {
			fmt.Fprintf(&out, "move %s\n", statetext.FormatState(b, moves[b]))
		}
		slices.SortFunc(remaining, statetext.Compare)
		for _, b := range remaining {
			fmt.Fprintf(&out, "remaining %s\n", statetext.FormatBucket(b))
		}
		fmt.Fprintf(&out, "movable %v\n", Movable(states, int32(server), statetext.Live(live)))
		return out.String()
	})
}

// memFence is an in-memory fenced swap over a state cache's revisions.
type memFence struct {
	mu    sync.Mutex
	epoch int64
	rev   int64
	revs  map[string]int64
}

func (f *memFence) Epoch() int64 { f.mu.Lock(); defer f.mu.Unlock(); return f.epoch }

func (f *memFence) FencedSwap(ctx context.Context, key string, expectRev int64, val []byte) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch == 0 {
		return 0, meta.ErrNotLeader()
	}
	if f.revs[key] != expectRev {
		return 0, nil
	}
	f.rev++
	f.revs[key] = f.rev
	return f.rev, nil
}

type notified struct {
	mu     sync.Mutex
	states map[cluster.Bucket]cluster.BucketState
}

func (n *notified) Notify(ctx context.Context, states map[cluster.Bucket]cluster.BucketState, t *cluster.TableInfo, p *cluster.PartitionInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for b, st := range states {
		n.states[b] = st
	}
}

type coordinator struct {
	active bool
	addr   string
}

func (c coordinator) Active() bool                    { return c.active }
func (c coordinator) CoordinatorAddr() (string, bool) { return c.addr, c.addr != "" }
func (c coordinator) Refresh(context.Context) error   { return nil }

// movedCoordinator names a stale coordinator until the election is read again (Refresh),
// then the current one.
type movedCoordinator struct {
	stale, current string
	refreshed      atomic.Int32
}

func (c *movedCoordinator) Active() bool { return false }
func (c *movedCoordinator) CoordinatorAddr() (string, bool) {
	if c.refreshed.Load() == 0 {
		return c.stale, true
	}
	return c.current, true
}
func (c *movedCoordinator) Refresh(context.Context) error { c.refreshed.Add(1); return nil }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newShutdown returns a Shutdown over states (statetext), each stored at its own revision.
func newShutdown(t *testing.T, lines string, live []int32, coord coordinator) (*Shutdown, *memFence, *notified) {
	t.Helper()
	states, err := statetext.ParseStates(lines)
	if err != nil {
		t.Fatal(err)
	}
	fence := &memFence{epoch: 4, revs: map[string]int64{}}
	cache := bucketstate.NewCache()
	entries := map[cluster.Bucket]bucketstate.Entry{}
	for b, st := range states {
		fence.rev++
		fence.revs[bucketstate.Key(b)] = fence.rev
		entries[b] = bucketstate.Entry{State: st, Rev: fence.rev}
	}
	cache.Replace(entries)
	n := &notified{states: map[cluster.Bucket]cluster.BucketState{}}
	s := &Shutdown{Writer: &assign.Writer{Fence: fence, States: cache}, States: cache, Live: statetext.Live(live),
		Notify: n, Coordinator: coord, Pool: peers.NewPool(), Log: discard()}
	t.Cleanup(s.Pool.Close)
	return s, fence, n
}

const twoBuckets = `
1/-/0 r=1,2 l=1 isr=1,2
1/-/1 r=1,3 l=1 isr=1
1/-/2 r=2,1 l=2 isr=2,1
`

func TestMoveLeaderships(t *testing.T) {
	s, fence, n := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	remaining, err := s.MoveLeaderships(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(remaining) != 1 || remaining[0].Bucket != 1 {
		t.Fatalf("remaining %v, want bucket 1 (no other ISR member)", remaining)
	}
	b0 := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0}
	if st, _ := s.States.State(b0); st.Leader != 2 || st.InISR(1) || st.CoordinatorEpoch != 4 {
		t.Fatalf("bucket 0 after the move: %+v", st)
	}
	if len(n.states) != 1 {
		t.Fatalf("notified %v, want the one moved bucket", n.states)
	}
	// Deposed meanwhile: NOT_COORDINATOR_LEADER, nothing moved.
	fence.epoch = 0
	if _, err := s.MoveLeaderships(context.Background(), 2); ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("a deposed coordinator moved leaderships: %v", err)
	}
}

func TestMoveLeadershipsOfAStateThatMovedOn(t *testing.T) {
	s, fence, n := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	fence.revs[bucketstate.Key(cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 0})] = 99
	remaining, err := s.MoveLeaderships(context.Background(), 1)
	if err != nil || len(remaining) != 2 || len(n.states) != 0 {
		t.Fatalf("remaining %v, notified %v, err %v: a state that moved on stays for the next request", remaining, n.states, err)
	}
}

// TestRequest runs the tablet server's side: in process on the active coordinator, and
// over the wire to another node's handler, which refuses requests on other listeners.
func TestRequest(t *testing.T) {
	ctx := context.Background()
	active, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	// Bucket 1 cannot move, and no retry can change that: Request ends without an error.
	if err := active.Request(ctx, 1, 5*time.Second); err != nil {
		t.Fatalf("in process: %v", err)
	}

	coord, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	internal, client := serve(t, sctx, coord, "FLUSS"), serve(t, sctx, coord, "CLIENT")
	standby, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{addr: internal})
	if err := standby.Request(ctx, 2, 5*time.Second); err != nil {
		t.Fatalf("over the wire: %v", err)
	}
	b2 := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 2}
	if st, _ := coord.States.State(b2); st.Leader != 1 {
		t.Fatalf("bucket 2 on the coordinator after server 2's shutdown: %+v", st)
	}
	wrong, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{addr: client})
	if err := wrong.Request(ctx, 2, 5*time.Second); ferr.CodeOf(err) != ferr.AuthorizationException {
		t.Fatalf("CONTROLLED_SHUTDOWN on a client listener: %v", err)
	}
	none, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{})
	if err := none.Request(ctx, 2, time.Second); err == nil || !strings.Contains(err.Error(), "no active coordinator") {
		t.Fatalf("without a coordinator: %v", err)
	}
}

// serve serves s's CONTROLLED_SHUTDOWN handler on a listener named name, internal listener
// "FLUSS"; it returns its address.
func serve(t *testing.T, ctx context.Context, s *Shutdown, name string) string {
	t.Helper()
	svc := wire.NewService(1)
	s.Register(svc, "FLUSS")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go wire.Serve(ctx, ln, svc, wire.ListenerConfig{Name: name}, discard())
	return ln.Addr().String()
}

// TestRequestFindsTheCurrentCoordinator: the coordinator the stopping server last knew was
// deposed (it answers NOT_COORDINATOR_LEADER); the server reads the election again and asks
// the current one, which moves its leadership.
func TestRequestFindsTheCurrentCoordinator(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	deposed, fence, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	fence.epoch = 0
	current, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{active: true})
	coord := &movedCoordinator{stale: serve(t, ctx, deposed, "FLUSS"), current: serve(t, ctx, current, "FLUSS")}
	stopping, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{})
	stopping.Coordinator = coord
	if err := stopping.Request(ctx, 2, 5*time.Second); err != nil {
		t.Fatalf("request after the coordinator moved: %v", err)
	}
	b2 := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: 2}
	if st, _ := current.States.State(b2); st.Leader != 1 {
		t.Fatalf("bucket 2 on the current coordinator: %+v, want leader 1", st)
	}
	if st, _ := deposed.States.State(b2); st.Leader != 2 {
		t.Fatalf("the deposed coordinator moved bucket 2: %+v", st)
	}

	// Every request goes to the stale coordinator (the election keeps naming it): retried
	// until the bound, then the NOT_COORDINATOR_LEADER error.
	stuck, _, _ := newShutdown(t, twoBuckets, []int32{1, 2, 3}, coordinator{addr: coord.stale})
	err := stuck.Request(ctx, 2, 2*time.Second)
	if ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("a request that only reaches a deposed coordinator: %v", err)
	}
}
