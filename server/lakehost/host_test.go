package lakehost_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/lakehost"
	"github.com/stromdb/strom/server/laketest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tieringChildren returns the pids of this process's strom-lake children.
func tieringChildren(t *testing.T) []int {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []int
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(data)) {
			pid, _ := strconv.Atoi(s)
			if exe, err := os.Readlink("/proc/" + s + "/exe"); err == nil && strings.HasPrefix(filepath.Base(exe), lakehost.DefaultBinary) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func startLakeServer(t *testing.T, set map[string]string) (*server.Node, error) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	for k, v := range set {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	n, err := server.Start(context.Background(), cfg, quiet())
	if err == nil {
		t.Cleanup(func() { n.Close() })
	}
	return n, err
}

// lakeTable is a two-bucket lake-enabled log table on a lake-enabled server.
type lakeTable struct {
	t      *testing.T
	ctx    context.Context
	n      *server.Node
	conn   *fluss.Connection
	tablet *wire.ClientConn
	path   fluss.TablePath
	id     int64
}

func newLakeTable(t *testing.T, set, props map[string]string) *lakeTable {
	t.Helper()
	opts := laketest.Options(t)
	maps.Copy(opts, set)
	n, err := startLakeServer(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: n.Addr("coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	lt := &lakeTable{t: t, ctx: ctx, n: n, conn: conn, path: fluss.NewTablePath("fluss", "tiered")}
	p := map[string]string{metadata.PropDatalakeEnabled: "true", metadata.PropDatalakeFreshness: "100ms"}
	maps.Copy(p, props)
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{fluss.NewColumn("id", fluss.Int())}), BucketCount: 2, Properties: p}
	if err := conn.Admin().CreateTable(ctx, lt.path, desc, false); err != nil {
		t.Fatal(err)
	}
	info, err := conn.Admin().GetTableInfo(ctx, lt.path)
	if err != nil {
		t.Fatal(err)
	}
	lt.id = info.TableID
	if lt.tablet, err = wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{ExpectServerType: 2}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lt.tablet.Close() })
	return lt
}

// appendRows appends rows from..to-1, one batch per bucket, with PRODUCE_LOG (the Go
// client's writers do not write to tables of an iceberg lake format).
func (lt *lakeTable) appendRows(from, to int) {
	t := lt.t
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	for bucket := int32(0); bucket < 2; bucket++ {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := from; i < to; i++ {
			if int32(i%2) == bucket {
				rb.Field(0).(*array.Int32Builder).Append(int32(i))
			}
		}
		rec := rb.NewRecordBatch()
		batch, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, arrowlog.CompressionNone, 0)
		rec.Release()
		rb.Release()
		if err != nil {
			t.Fatal(err)
		}
		var resp flusspb.ProduceLogResponse
		req := &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(lt.id), TimeoutMs: proto.Int32(30000),
			BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(bucket), Records: batch}}}
		if err := lt.tablet.Call(lt.ctx, wire.ProduceLog, req, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.BucketsResp[0].ErrorCode != nil {
			t.Fatalf("produce: %s", resp.BucketsResp[0].GetErrorMessage())
		}
	}
}

// waitTiered waits until the lake snapshot's offsets sum to want.
func (lt *lakeTable) waitTiered(want int64) {
	t := lt.t
	t.Helper()
	var sum int64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		s, err := lt.conn.Admin().GetLatestLakeSnapshot(lt.ctx, lt.path)
		if err != nil {
			continue // not tiered yet, or the process is restarting
		}
		sum = 0
		for _, off := range s.BucketOffsets {
			sum += off
		}
		if sum >= want {
			break
		}
	}
	if sum != want {
		t.Fatalf("tiered offsets sum to %d, want %d", sum, want)
	}
}

// earliest is the sum of the buckets' log start offsets.
func (lt *lakeTable) earliest() int64 {
	offs, err := lt.conn.Admin().ListOffsets(lt.ctx, lt.path, []int32{0, 1}, fluss.OffsetEarliest())
	if err != nil {
		lt.t.Fatal(err)
	}
	return offs[0] + offs[1]
}

// A killed tiering process is restarted, and tiering continues from the offsets Iceberg holds:
// every row ends up tiered exactly once. Closing the server stops the process.
func TestKilledTieringProcessRestarts(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc")
	}
	lt := newLakeTable(t, nil, nil)
	lt.appendRows(0, 20)
	lt.waitTiered(20)
	before := tieringChildren(t)
	if len(before) != 1 {
		t.Fatalf("tiering processes %v, want one", before)
	}
	if err := syscall.Kill(before[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lt.appendRows(20, 50)
	lt.waitTiered(50)
	after := tieringChildren(t)
	if len(after) != 1 || after[0] == before[0] {
		t.Fatalf("tiering processes %v after killing %d, want one new one", after, before[0])
	}
	lt.n.Close()
	for deadline := time.Now().Add(15 * time.Second); len(tieringChildren(t)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tiering process %v still running after the server closed", tieringChildren(t))
		}
	}
}

// The offsets the tiering process reports reach retention: expired segments of a lake table
// are deleted once tiered, up to the tiered offset and no further.
func TestRetentionFollowsReportedOffsets(t *testing.T) {
	lt := newLakeTable(t, map[string]string{"log.segment.file-size": "64b", "log.retention.check-interval": "20ms"},
		map[string]string{"table.log.ttl": "1ms"})
	for i := 0; i < 4; i++ { // one segment per batch
		lt.appendRows(i*10, (i+1)*10)
	}
	lt.waitTiered(40)
	for deadline := time.Now().Add(30 * time.Second); lt.earliest() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no segment of the tiered lake table was deleted")
		}
	}
	if e := lt.earliest(); e > 40 {
		t.Fatalf("log start offsets sum to %d, past the tiered 40", e)
	}
}

// A lake-enabled server whose tiering program is missing does not start, and says why.
func TestMissingTieringBinary(t *testing.T) {
	_, err := startLakeServer(t, map[string]string{"datalake.format": "iceberg", lakehost.OptBinary: filepath.Join(t.TempDir(), "no-such-strom-lake")})
	if err == nil || !strings.Contains(err.Error(), "no-such-strom-lake") || !strings.Contains(err.Error(), lakehost.OptBinary) {
		t.Fatalf("start: %v, want an error naming the binary and %s", err, lakehost.OptBinary)
	}
	// Without the option, strom-lake is looked for next to the executable (the test binary
	// here, without one) and on $PATH.
	t.Setenv("PATH", t.TempDir())
	if _, err := lakehost.FindBinary(""); err == nil || !strings.Contains(err.Error(), lakehost.DefaultBinary) {
		t.Fatalf("FindBinary: %v, want not found", err)
	}
	// A server without a data lake needs no tiering program.
	if _, err := startLakeServer(t, nil); err != nil {
		t.Fatal(err)
	}
}

type emptyCatalog struct{}

func (emptyCatalog) TableByID(int64) (*cluster.TableInfo, bool) { return nil, false }
func (emptyCatalog) Schema(int64, int32) (metadata.Schema, bool) {
	return metadata.Schema{}, false
}

// The host answers for the tiering: its metrics, and while the process is down a prompt error
// rather than a hang; a non-lake table has no retention floor, a lake table's is 0 until known.
func TestHostWhileProcessIsDown(t *testing.T) {
	cfg, err := lakeconf.ConfigFrom(map[string]string{"datalake.format": "iceberg"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := lakehost.New(lakehost.Options{Config: cfg, Binary: laketest.Binary(t), Logger: quiet(), FirstBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := h.Floor(cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition}); f != 0 {
		t.Errorf("floor before Start %d, want 0", f)
	}
	h.Start(nil, emptyCatalog{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	if !names["fluss_coordinator_lakeTiering_pendingTablesCount"] || !names["fluss_coordinator_lakeTiering_runningTablesCount"] {
		t.Errorf("metrics %v, want the lake tiering's", names)
	}
	info := &cluster.TableInfo{ID: 1, Path: cluster.TablePath{Database: "fluss", Table: "t"}}
	if _, err := h.Snapshot(context.Background(), info, nil); !errors.Is(err, lakeconf.ErrNoSnapshot) {
		t.Fatalf("snapshot of a table never tiered: %v", err)
	}

	pids := tieringChildren(t)
	if len(pids) != 1 {
		t.Fatalf("tiering processes %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := h.Snapshot(ctx, info, nil)
		cancel()
		if errors.Is(err, lakehost.ErrNotRunning) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot with the process killed: %v, want ErrNotRunning", err)
		}
	}
	if n := len(tieringChildren(t)); n != 0 {
		t.Fatalf("%d tiering processes, want none during the backoff", n)
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Errorf("metrics while down: %d families, %v; want none", len(mfs), err)
	}
	if f := h.Floor(cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition}); f != 1<<63-1 {
		t.Errorf("floor of an unknown table %d, want MaxInt64", f)
	}
}

// A tiering process that cannot open the lake catalog fails the server's start with its
// reason: here a REST catalog (built into the default strom-lake) that nothing serves.
func TestTieringProcessErrorFailsStart(t *testing.T) {
	set := laketest.Options(t)
	set["datalake.iceberg.type"] = "rest"
	set["datalake.iceberg.uri"] = "http://127.0.0.1:1"
	_, err := startLakeServer(t, set)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("start: %v, want the tiering process's error about the unreachable REST catalog", err)
	}
	if pids := tieringChildren(t); len(pids) != 0 {
		t.Fatalf("tiering processes %v left running", pids)
	}
}

// The tiering metrics the process reports are on the server's /metrics, with Fluss's names
// and the server's host and server_id labels.
func TestTieringMetricsOnServer(t *testing.T) {
	lt := newLakeTable(t, map[string]string{"http.listen": "127.0.0.1:0"}, nil)
	lt.appendRows(0, 10)
	lt.waitTiered(10)
	resp, err := http.Get("http://" + lt.n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`fluss_coordinator_lakeTiering_table_recordCount{database="fluss",host="127.0.0.1",server_id="0",table="tiered"} 10`,
		`fluss_coordinator_lakeTiering_runningTablesCount{host="127.0.0.1",server_id="0"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(string(body), "\n") {
			if strings.Contains(l, "lakeTiering") {
				t.Log(l)
			}
		}
	}
}
