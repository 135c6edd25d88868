package tablet_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/logstore"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// restartable is a server over a data directory that tests stop and start again.
type restartable struct {
	t      *testing.T
	dir    string
	logs   io.Writer
	node   *server.Node
	coord  *wire.ClientConn
	tablet *wire.ClientConn
}

func (r *restartable) start() {
	r.t.Helper()
	cfg := config.Default()
	cfg.DataDir = r.dir
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	var err error
	if r.node, err = server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(r.logs, nil))); err != nil {
		r.t.Fatal(err)
	}
	ctx := context.Background()
	if r.coord, err = wire.Dial(ctx, r.node.Addr("coordinator"), wire.ClientConfig{ExpectServerType: 1}); err != nil {
		r.t.Fatal(err)
	}
	if r.tablet, err = wire.Dial(ctx, r.node.Addr("tablet-server"), wire.ClientConfig{ExpectServerType: 2}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *restartable) stop() {
	r.coord.Close()
	r.tablet.Close()
	r.node.Close()
}

func fetchBucket0(t *testing.T, tablet *wire.ClientConn, tableID, offset int64) *flusspb.PbFetchLogRespForBucket {
	t.Helper()
	var resp flusspb.FetchLogResponse
	req := &flusspb.FetchLogRequest{FollowerServerId: proto.Int32(-1), MaxBytes: proto.Int32(8 << 20),
		TablesReq: []*flusspb.PbFetchLogReqForTable{{TableId: proto.Int64(tableID), ProjectionPushdownEnabled: proto.Bool(false),
			BucketsReq: []*flusspb.PbFetchLogReqForBucket{{BucketId: proto.Int32(0), FetchOffset: proto.Int64(offset), MaxFetchBytes: proto.Int32(8 << 20)}}}}}
	if err := tablet.Call(context.Background(), wire.FetchLog, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.TablesResp[0].BucketsResp[0]
}

func listLatest(t *testing.T, tablet *wire.ClientConn, tableID int64) *flusspb.PbListOffsetsRespForBucket {
	t.Helper()
	var resp flusspb.ListOffsetsResponse
	req := &flusspb.ListOffsetsRequest{FollowerServerId: proto.Int32(-1), OffsetType: proto.Int32(1), TableId: proto.Int64(tableID), BucketId: []int32{0}}
	if err := tablet.Call(context.Background(), wire.ListOffsets, req, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.BucketsResp[0]
}

// flipInSegment flips one byte in the middle of the bucket's only segment and reports the
// segment path and the position of the batch holding the byte.
func flipInSegment(t *testing.T, dataDir string, tableID int64, at func(size int64) int64) (string, int64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dataDir, "tablet", "table-"+itoa(tableID), "bucket-0", "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	target := at(int64(len(data)))
	var pos int64
	for {
		b, _, ok := record.Split(data[pos:])
		if !ok {
			t.Fatal("byte not inside a batch")
		}
		if pos+int64(len(b)) > target {
			break
		}
		pos += int64(len(b))
	}
	data[target] ^= 0x20
	if err := os.WriteFile(segs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	return segs[0], pos
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestCorruptBucketGoesOfflineAndServerStaysUp reproduces findings 5a and 5b end to end: a
// flipped byte in the middle of a bucket's segment, after a kill -9 (no clean-shutdown
// marker) or after a clean shutdown, never truncates acknowledged batches and is never
// served: the server starts, that bucket answers LOG_STORAGE_EXCEPTION to produce, fetch
// and list offsets, other tables work, and after the operator's repair the bucket serves the
// batches before the damage.
func TestCorruptBucketGoesOfflineAndServerStaysUp(t *testing.T) {
	for _, crash := range []bool{true, false} {
		name := "clean shutdown"
		if crash {
			name = "kill -9"
		}
		t.Run(name, func(t *testing.T) {
			logs := &lockedBuffer{}
			r := &restartable{t: t, dir: t.TempDir(), logs: logs}
			r.start()
			id := createLogTable(t, r.coord, "victim")
			other := createLogTable(t, r.coord, "bystander")
			for i := 0; i < 300; i++ {
				if resp := produce(t, r.tablet, id, rowBatch(1)); resp.GetErrorCode() != 0 {
					t.Fatalf("produce %d: %d", i, resp.GetErrorCode())
				}
			}
			produce(t, r.tablet, other, rowBatch(2))
			r.stop()
			seg, pos := flipInSegment(t, r.dir, id, func(n int64) int64 { return n / 3 })
			if crash {
				if err := os.Remove(filepath.Join(filepath.Dir(seg), "clean_shutdown")); err != nil {
					t.Fatal(err)
				}
			}

			r.start()
			if crash && !strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("no ERROR line at start:\n%s", logs.String())
			}
			f := fetchBucket0(t, r.tablet, id, 0)
			if ferr.Code(f.GetErrorCode()) != ferr.LogStorageException || len(f.Records) != 0 {
				t.Fatalf("fetch from a corrupt bucket: code %d, %d bytes", f.GetErrorCode(), len(f.Records))
			}
			if !strings.Contains(f.GetErrorMessage(), filepath.Base(seg)) {
				t.Errorf("fetch error %q does not name the segment", f.GetErrorMessage())
			}
			if p := produce(t, r.tablet, id, rowBatch(1)); ferr.Code(p.GetErrorCode()) != ferr.LogStorageException {
				t.Fatalf("produce to a corrupt bucket: code %d", p.GetErrorCode())
			}
			if l := listLatest(t, r.tablet, id); ferr.Code(l.GetErrorCode()) != ferr.LogStorageException {
				t.Fatalf("list offsets of a corrupt bucket: code %d", l.GetErrorCode())
			}
			if o := fetchBucket0(t, r.tablet, other, 0); o.GetErrorCode() != 0 || len(o.Records) == 0 {
				t.Fatalf("another table: code %d", o.GetErrorCode())
			}
			if st, _ := os.Stat(seg); st == nil || st.Size() <= pos {
				t.Fatal("the segment was truncated")
			}
			r.stop()

			rep, err := logstore.AcceptTruncation(filepath.Dir(seg))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Position != pos {
				t.Fatalf("repair cut at %d, corrupt batch at %d", rep.Position, pos)
			}
			r.start()
			defer r.stop()
			if l := listLatest(t, r.tablet, id); l.GetErrorCode() != 0 || l.GetOffset() != rep.LogEnd {
				t.Fatalf("after repair: code %d offset %d, want %d", l.GetErrorCode(), l.GetOffset(), rep.LogEnd)
			}
			f = fetchBucket0(t, r.tablet, id, 0)
			n := 0
			for b, err := range record.Iterate(f.Records) {
				if err != nil || b.Validate() != nil {
					t.Fatalf("fetched batch invalid: %v", err)
				}
				n++
			}
			if int64(n) != rep.LogEnd {
				t.Fatalf("fetched %d batches after repair, want %d", n, rep.LogEnd)
			}
			if p := produce(t, r.tablet, id, rowBatch(1)); p.GetErrorCode() != 0 || p.GetBaseOffset() != rep.LogEnd {
				t.Fatalf("produce after repair: code %d base %d", p.GetErrorCode(), p.GetBaseOffset())
			}
		})
	}
}
