package tablet_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/predicate"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// startNodeIn starts a server on dir with the configuration adjusted by set; stop closes it.
func startNodeIn(t *testing.T, dir string, set func(*config.Config)) (coord, tablet *wire.ClientConn, stop func()) {
	coord, tablet, _, stop = startNodeAt(t, dir, set)
	return coord, tablet, stop
}

// startNodeAt is startNodeIn that also returns the tablet server's address.
func startNodeAt(t testing.TB, dir string, set func(*config.Config)) (coord, tablet *wire.ClientConn, tabletAddr string, stop func()) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	set(&cfg)
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if coord, err = wire.Dial(ctx, n.Addr("coordinator"), wire.ClientConfig{}); err != nil {
		n.Close()
		t.Fatal(err)
	}
	if tablet, err = wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{}); err != nil {
		coord.Close()
		n.Close()
		t.Fatal(err)
	}
	return coord, tablet, n.Addr("tablet-server"), func() { coord.Close(); tablet.Close(); n.Close() }
}

// zeroCopyTable is a table of the randomized comparison and its log end offset.
type zeroCopyTable struct {
	id    int64
	arrow bool // ARROW (filters and projections apply), else INDEXED rows
	leo   int64
}

// randomFetch is a FETCH_LOG over some of tables with random offsets and limits, and, on
// the ARROW table, sometimes a projection, a filter or both. It returns the request and
// the ids of the tables whose records are sent unprojected (from the segment files).
func randomFetch(rng *rand.Rand, tables []zeroCopyTable) (*flusspb.FetchLogRequest, map[int64]bool) {
	req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(int32(rng.IntN(8<<20) + 1))}
	fromFile := make(map[int64]bool)
	for _, tb := range tables {
		if rng.IntN(3) == 0 {
			continue
		}
		tr := &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(tb.id), ProjectionPushdownEnabled: proto.Bool(false)}
		if tb.arrow && rng.IntN(3) == 0 {
			tr.ProjectionPushdownEnabled, tr.ProjectedFields = proto.Bool(true), []int32{0}
		}
		if tb.arrow && rng.IntN(3) == 0 {
			op := []predicate.Op{predicate.LessThan, predicate.GreaterOrEqual}[rng.IntN(2)]
			tr.FilterPredicate = predicate.LeafPB(op, 0, intLit(int32(rng.IntN(200_000))))
			tr.FilterSchemaId = proto.Int32(1)
		}
		fromFile[tb.id] = !tr.GetProjectionPushdownEnabled()
		offset := rng.Int64N(tb.leo + 1)
		if rng.IntN(8) == 0 {
			offset = -2 // earliest
		}
		maxFetch := int32(rng.IntN(4<<20) + 1)
		if rng.IntN(8) == 0 {
			maxFetch = 1 // one batch, whatever its size
		}
		tr.BucketsReq = []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(offset), MaxFetchBytes: proto.Int32(maxFetch)}}
		req.TablesReq = append(req.TablesReq, tr)
	}
	return req, fromFile
}

// FETCH_LOG answers sent from the segment files (sendfile) are byte for byte those the
// copying path (log.fetch.zero-copy=false) sends for the same requests over the same data,
// for random offsets, limits, several tables per request, scan filters and projections;
// and the file-byte counters show that the unprojected records went by sendfile.
func TestZeroCopyFetchMatchesTheCopyPath(t *testing.T) {
	dir := t.TempDir()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	smallSegments := func(c *config.Config) { c.LogSegmentBytes = 1 << 20 }
	coord, tablet, stop := startNodeIn(t, dir, smallSegments)
	tables := []zeroCopyTable{
		{id: createLogTableFormat(t, coord, "zc_arrow", "ARROW"), arrow: true},
		{id: createLogTableFormat(t, coord, "zc_rows", "INDEXED")},
	}
	for i, from := 0, 0; i < 120; i++ {
		n := rng.IntN(6000) + 1
		produce(t, tablet, tables[0].id, idBatch(t, from, n))
		from += n
		tables[0].leo += int64(n)
	}
	for range 50 {
		produce(t, tablet, tables[1].id, bigBatch(rng.IntN(300<<10)+1))
		tables[1].leo++
	}
	const fetches = 150
	reqs := make([]*flusspb.FetchLogRequest, fetches)
	fromFile := make([]map[int64]bool, fetches)
	for i := range reqs {
		reqs[i], fromFile[i] = randomFetch(rng, tables)
	}
	run := func(tablet *wire.ClientConn) (answers [][]byte, streamed, small int64) {
		for i, req := range reqs {
			body, err := proto.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := tablet.CallRaw(context.Background(), wire.FetchLog, 0, body)
			if err != nil {
				t.Fatalf("fetch %d: %v", i, err)
			}
			answers = append(answers, raw)
			var resp flusspb.FetchLogResponse
			if err := proto.Unmarshal(raw, &resp); err != nil {
				t.Fatalf("fetch %d: the answer does not decode: %v", i, err)
			}
			var fileBytes int64
			for _, tr := range resp.TablesResp {
				for _, br := range tr.BucketsResp {
					if br.GetErrorCode() != 0 {
						t.Fatalf("fetch %d: table %d: error %d %s", i, tr.GetTableId(), br.GetErrorCode(), br.GetErrorMessage())
					}
					for _, err := range record.Iterate(br.Records) {
						if err != nil {
							t.Fatalf("fetch %d: table %d: %v", i, tr.GetTableId(), err)
						}
					}
					if fromFile[i][tr.GetTableId()] {
						fileBytes += int64(len(br.Records))
					}
				}
			}
			if fileBytes >= 32<<10 { // internal/wire's minStreamedFileBytes
				streamed += fileBytes
			} else {
				small += fileBytes
			}
		}
		// The file bytes of an answer are counted after its last byte is written, under the
		// connection's write lock: one more answer on the connection orders the count
		// before the caller reads it.
		latest(t, tablet, tables[1].id)
		return answers, streamed, small
	}
	sent0, copied0 := wire.FileBytesStats()
	zeroCopy, streamed, small := run(tablet)
	sent, copied := wire.FileBytesStats()
	stop()
	if streamed == 0 {
		t.Fatal("no answer was large enough to be streamed")
	}
	if sent-sent0 != streamed || copied-copied0 != small {
		t.Errorf("zero-copy: %d file bytes sent by sendfile and %d copied, want %d and %d", sent-sent0, copied-copied0, streamed, small)
	}

	_, tablet, stop = startNodeIn(t, dir, func(c *config.Config) { smallSegments(c); c.FetchZeroCopy = false })
	defer stop()
	sent0, copied0 = wire.FileBytesStats()
	copying, _, _ := run(tablet)
	sent, copied = wire.FileBytesStats()
	if sent != sent0 || copied-copied0 != streamed+small {
		t.Errorf("copy path: %d file bytes sent by sendfile and %d copied, want 0 and %d", sent-sent0, copied-copied0, streamed+small)
	}
	for i := range reqs {
		if string(zeroCopy[i]) != string(copying[i]) {
			t.Fatalf("fetch %d (%v): %d bytes from the zero-copy path, %d from the copy path, differing", i, reqs[i], len(zeroCopy[i]), len(copying[i]))
		}
	}
}

// earliest is the log start offset of bucket 0.
func earliest(t *testing.T, tablet *wire.ClientConn, tableID int64) int64 {
	t.Helper()
	var resp flusspb.ListOffsetsResponse
	req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(0), TableId: proto.Int64(tableID), BucketId: []int32{0}}
	if err := tablet.Call(context.Background(), wire.ListOffsets, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.BucketsResp[0].GetOffset()
}

// A FETCH_LOG answer being sent to a client that does not read it holds its segments open,
// not locked. The answer carries two tables: while the first one's records wait for the
// client, retention deletes the segment the second one's records are in; meanwhile that
// bucket takes appends and serves other readers, and the slow client still receives every
// byte of both, intact.
func TestZeroCopyFetchOutlivesRetentionOfItsSegment(t *testing.T) {
	const segment = 16 << 20 // far more than the loopback socket buffers hold in flight
	coord, tablet, addr, stop := startNodeAt(t, t.TempDir(), func(c *config.Config) {
		c.LogSegmentBytes = segment
		c.LogRetentionCheck = 20 * time.Millisecond
	})
	defer stop()
	first, second := createLogTable(t, coord, "zc_first"), createLogTable(t, coord, "zc_second")
	for range segment / (1 << 20) {
		produce(t, tablet, first, bigBatch(1<<20))
	}
	for range segment/(1<<20) + 2 { // two segments: the first one can expire
		produce(t, tablet, second, bigBatch(1<<20))
	}

	// The slow client: a tiny receive buffer, set before connecting so the window stays small.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(64 << 20)}
	for _, id := range []int64{first, second} {
		req.TablesReq = append(req.TablesReq, &flusspb.PbFetchLogReqForTable{TableId: proto.Int64(id), ProjectionPushdownEnabled: proto.Bool(false),
			BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(0), MaxFetchBytes: proto.Int32(32 << 20)}}})
	}
	frame := wire.AppendRequestHeader(nil, wire.RequestHeader{APIKey: wire.FetchLog, RequestID: 1})
	if frame, err = (proto.MarshalOptions{}).MarshalAppend(frame, req); err != nil {
		t.Fatal(err)
	}
	wire.FinishFrame(frame)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	// The length prefix arrives before the records: once it is here, the server is sending
	// the first table's records, and most of them cannot leave until this client reads.
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	var prefix [4]byte
	if _, err := io.ReadFull(nc, prefix[:]); err != nil {
		t.Fatal(err)
	}
	size := int(binary.BigEndian.Uint32(prefix[:]))
	if size < segment {
		t.Fatalf("answer of %d bytes, want most of two %d-byte segments", size, segment)
	}

	// Retention deletes the segment the second table's records are sent from.
	if err := coord.Call(context.Background(), wire.AlterTable, &flusspb.AlterTableRequest{
		TablePath:         &flusspb.PbTablePath{DatabaseName: proto.String("fluss"), TableName: proto.String("zc_second")},
		IgnoreIfNotExists: proto.Bool(false),
		ConfigChanges:     []*flusspb.PbAlterConfig{{ConfigKey: proto.String("table.log.ttl"), ConfigValue: proto.String("1 ms"), OpType: proto.Int32(0)}},
	}, &flusspb.AlterTableResponse{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for earliest(t, tablet, second) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retention did not delete the first segment")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Not blocked by the stalled answer: appends and reads of the same bucket.
	if r := produce(t, tablet, second, bigBatch(100)); r.GetErrorCode() != 0 {
		t.Fatalf("append during the stalled fetch: %d %s", r.GetErrorCode(), r.GetErrorMessage())
	}
	if bo := fetchBucket0(t, tablet, second, earliest(t, tablet, second)); bo.GetErrorCode() != 0 || len(bo.GetRecords()) == 0 {
		t.Fatalf("fetch during the stalled fetch: %d %s", bo.GetErrorCode(), bo.GetErrorMessage())
	}

	payload := make([]byte, size)
	if _, err := io.ReadFull(nc, payload); err != nil {
		t.Fatalf("reading the answer after a segment it is sent from was deleted: %v", err)
	}
	var resp flusspb.FetchLogResponse
	if err := proto.Unmarshal(payload[wire.ResponseHeaderSize:], &resp); err != nil {
		t.Fatal(err)
	}
	for i, tr := range resp.TablesResp {
		bo := tr.BucketsResp[0]
		next := int64(0)
		for b, err := range record.Iterate(bo.Records) {
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Validate(); err != nil || b.BaseOffset() != next {
				t.Fatalf("table %d: batch at %d (want %d): %v", i, b.BaseOffset(), next, err)
			}
			next = b.NextOffset()
		}
		if next < segment/(1<<20)-1 {
			t.Fatalf("table %d: answer ends at offset %d", i, next)
		}
	}
}
