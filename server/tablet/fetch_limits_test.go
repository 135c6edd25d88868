package tablet_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// nodeWith is node with the configuration adjusted by set.
func nodeWith(t *testing.T, set func(*config.Config)) (coord, tablet *wire.ClientConn) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	set(&cfg)
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	if coord, err = wire.Dial(ctx, n.Addr("coordinator"), wire.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	if tablet, err = wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { coord.Close(); tablet.Close() })
	return coord, tablet
}

// bigBatch is a row-format batch of one record of about size bytes.
func bigBatch(size int) []byte {
	recs := record.AppendRowLogRecord(nil, record.AppendOnly, make([]byte, size))
	return record.AppendV0Batch(nil, record.V0Header{SchemaID: 1, AppendOnly: true, WriterID: -1, BatchSequence: -1, RecordCount: 1}, recs)
}

// fetchRepeated fetches bucket 0 of tableID from offset 0, naming it times times, with every
// size limit at 2^31-1.
func fetchRepeated(t *testing.T, tablet *wire.ClientConn, tableID int64, times int) (*flusspb.FetchLogResponse, uint64) {
	t.Helper()
	tr := &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(tableID), ProjectionPushdownEnabled: proto.Bool(false)}
	for range times {
		tr.BucketsReq = append(tr.BucketsReq, &flusspb.PbFetchLogReqForBucket{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(math.MaxInt32)})
	}
	req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(math.MaxInt32), TablesReq: []*flusspb.PbFetchLogReqForTable{tr}}
	var resp flusspb.FetchLogResponse
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := tablet.Call(context.Background(), wire.FetchLog, req, &resp); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return &resp, after.TotalAlloc - before.TotalAlloc
}

func TestFetchOfARepeatedBucketIsAnsweredOnce(t *testing.T) {
	coord, tablet := node(t)
	id := createLogTable(t, coord, "repeated")
	stored := 0
	for range 16 {
		b := bigBatch(256 << 10)
		produce(t, tablet, id, b)
		stored += len(b)
	}
	resp, alloc := fetchRepeated(t, tablet, id, 10)
	if len(resp.TablesResp) != 1 || len(resp.TablesResp[0].BucketsResp) != 1 {
		n := 0
		for _, tr := range resp.TablesResp {
			n += len(tr.BucketsResp)
		}
		t.Fatalf("response has %d tables and %d bucket answers, want the bucket once", len(resp.TablesResp), n)
	}
	if got := len(resp.TablesResp[0].BucketsResp[0].Records); got != stored {
		t.Fatalf("fetched %d bytes, want the %d stored", got, stored)
	}
	// Server frame (grown by appending), client frame and decoded copy: a few times the 4 MiB
	// stored; answering each of the ten names would be ten times that.
	if alloc > uint64(8*stored) {
		t.Fatalf("fetching %d bytes allocated %d MiB", stored, alloc>>20)
	}
}

func TestFetchResponseIsCappedByTheServer(t *testing.T) {
	coord, tablet := nodeWith(t, func(c *config.Config) { c.FetchMaxResponseSize = 1 << 20 })
	id := createLogTable(t, coord, "capped")
	batch := bigBatch(256 << 10)
	for range 16 {
		produce(t, tablet, id, batch)
	}
	resp, _ := fetchRepeated(t, tablet, id, 1)
	got := len(resp.TablesResp[0].BucketsResp[0].Records)
	if got == 0 || got > 1<<20+len(batch) {
		t.Fatalf("fetched %d bytes with a 1 MiB server cap and 2^31-1 asked", got)
	}
	// A cap below one batch still returns that batch: a consumer must make progress.
	coord, tablet = nodeWith(t, func(c *config.Config) { c.FetchMaxResponseSize = 1 << 10 })
	id = createLogTable(t, coord, "tiny_cap")
	produce(t, tablet, id, batch)
	produce(t, tablet, id, batch)
	resp, _ = fetchRepeated(t, tablet, id, 1)
	if got := len(resp.TablesResp[0].BucketsResp[0].Records); got != len(batch) {
		t.Fatalf("fetched %d bytes, want exactly the first batch (%d)", got, len(batch))
	}
}

// The probe's scenario: a client pipelines long-poll FETCH_LOGs on an idle table and never
// reads an answer. The server parks at most the connection's in-flight limit of them and stops
// reading; its heap stays small.
func TestPipelinedLongPollsAreBounded(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addr := n.Addr("tablet-server")
	c, err := wire.Dial(context.Background(), n.Addr("coordinator"), wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := createLogTable(t, c, "idle")

	body, _ := proto.Marshal(&flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(16 << 20),
		MinBytes: proto.Int32(1), MaxWaitMs: proto.Int32(60000),
		TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(id), ProjectionPushdownEnabled: proto.Bool(false),
			BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(1 << 20)}}}}})
	var frames []byte
	for i := range 20000 {
		f := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.FetchLog, RequestID: int32(i)})
		f = append(f, body...)
		wire.FinishFrame(f)
		frames = append(frames, f...)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	go nc.Write(frames)
	time.Sleep(time.Second)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// Heap and goroutine stacks: a parked long poll is mostly its goroutine.
	if grown := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse); grown > 32<<20 {
		t.Fatalf("20,000 pipelined long polls grew heap and stacks by %d MiB", grown>>20)
	}
	if g := runtime.NumGoroutine(); g > 5000 {
		t.Fatalf("%d goroutines: the long polls were not bounded", g)
	}
}
