package metrics_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// node is a running server with its HTTP listener on a free loopback port.
type node struct {
	*server.Node
	http string
}

func start(t *testing.T, mutate func(*config.Config)) node {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1"}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1"}}
	for k, v := range map[string]string{"metrics.reporters": "prometheus", "http.listen": "127.0.0.1:0"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if n.HTTPAddr() == "" {
		t.Fatal("HTTP listener not started")
	}
	return node{Node: n, http: "http://" + n.HTTPAddr()}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// scrape fetches /metrics and parses it.
func scrape(t *testing.T, n node) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, n.http+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// find returns the metric of family name whose labels include want, or nil.
func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	m := find(fams, name, labels)
	if m == nil {
		t.Fatalf("no metric %s%v", name, labels)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s: unexpected type", name)
	return 0
}

// traffic creates a log table and a primary-key table, writes rows, reads them back and
// looks a key up: every request type the dashboard shows.
func traffic(t *testing.T, n node, rows int) {
	bootstrap := n.Addr("coordinator")
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := conn.Admin()
	if err := admin.CreateDatabase(ctx, "ops", nil, true); err != nil {
		t.Fatal(err)
	}
	cols := []fluss.Column{fluss.NewColumn("id", fluss.Int()), fluss.NewColumn("name", fluss.String())}
	logPath, kvPath := fluss.NewTablePath("ops", "events"), fluss.NewTablePath("ops", "users")
	if err := admin.CreateTable(ctx, logPath, fluss.TableDescriptor{Schema: fluss.NewSchema(cols), BucketCount: 1}, false); err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTable(ctx, kvPath, fluss.TableDescriptor{Schema: fluss.NewSchema(cols, "id"), BucketCount: 1}, false); err != nil {
		t.Fatal(err)
	}
	logT, err := conn.Table(ctx, logPath)
	if err != nil {
		t.Fatal(err)
	}
	aw, err := logT.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	kvT, err := conn.Table(ctx, kvPath)
	if err != nil {
		t.Fatal(err)
	}
	uw, err := kvT.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if _, err := aw.Append(ctx, fluss.Row{int32(i), fmt.Sprint("row-", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := uw.Upsert(ctx, fluss.Row{int32(i), fmt.Sprint("user-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := aw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := uw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sc, err := logT.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < rows; {
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got += len(recs)
	}
	lk, err := kvT.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	if row, err := lk.Lookup(ctx, fluss.Row{int32(1)}); err != nil || row == nil {
		t.Fatalf("lookup: %v %v", row, err)
	}
	// Requests that fail: a table that does not exist, and a LOOKUP whose body is not protobuf.
	if _, err := admin.GetTableInfo(ctx, fluss.NewTablePath("ops", "missing")); fluss.CodeOf(err) != fluss.ErrTableNotExist {
		t.Fatalf("GetTableInfo(missing) = %v", err)
	}
	wc, err := wire.Dial(ctx, n.Addr("tablet-server"), wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	v, err := wc.Version(wire.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wc.CallRaw(ctx, wire.Lookup, v, []byte{0xff, 0xff}); ferr.CodeOf(err) != ferr.CorruptMessage {
		t.Fatalf("LOOKUP with a garbage body: %v, want CORRUPT_MESSAGE", err)
	}
}

func TestMetricsMoveWithTraffic(t *testing.T) {
	n := start(t, nil)
	before := scrape(t, n)
	if m := find(before, "fluss_tabletserver_request_requests_total", map[string]string{"request": "produceLog"}); m != nil {
		t.Fatalf("produceLog counted before any produce: %v", m)
	}
	const rows = 25
	traffic(t, n, rows)
	after := scrape(t, n)

	ts := func(request string) map[string]string { return map[string]string{"request": request, "server_id": "0"} }
	for _, req := range []string{"produceLog", "putKv", "fetchLogClient", "lookup", "initWriter"} {
		if v := value(t, after, "fluss_tabletserver_request_requests_total", ts(req)); v < 1 {
			t.Errorf("requests_total{request=%q} = %v, want >= 1", req, v)
		}
		if v := value(t, after, "fluss_tabletserver_request_totalTime_seconds", ts(req)); v < 1 {
			t.Errorf("totalTime_seconds{request=%q} count = %v, want >= 1", req, v)
		}
		m := find(after, "fluss_tabletserver_request_requestBytes", ts(req))
		if m == nil || m.Histogram.GetSampleSum() <= 0 {
			t.Errorf("requestBytes{request=%q} = %v, want a positive sum", req, m)
		}
	}
	// Admin requests go to the coordinator; the failed one is counted with its error name.
	if v := value(t, after, "fluss_coordinator_request_requests_total", map[string]string{"request": "createTable"}); v != 2 {
		t.Errorf("coordinator createTable = %v, want 2", v)
	}
	if v := value(t, after, "fluss_coordinator_request_errors_total", map[string]string{"request": "getTableInfo", "error": "TABLE_NOT_EXIST"}); v != 1 {
		t.Errorf("errors_total{getTableInfo,TABLE_NOT_EXIST} = %v, want 1", v)
	}
	if v := value(t, after, "fluss_tabletserver_request_errors_total", map[string]string{"request": "lookup", "error": "CORRUPT_MESSAGE"}); v != 1 {
		t.Errorf("errors_total{lookup,CORRUPT_MESSAGE} = %v, want 1", v)
	}
	if find(after, "fluss_tabletserver_request_errors_total", map[string]string{"request": "produceLog"}) != nil {
		t.Error("produceLog errors counted although every produce succeeded")
	}

	bucket := func(table string) map[string]string {
		return map[string]string{"database": "ops", "table": table, "partition": "", "bucket": "0"}
	}
	for _, table := range []string{"events", "users"} {
		if v := value(t, after, "fluss_tabletserver_table_bucket_log_endOffset", bucket(table)); v != rows {
			t.Errorf("%s endOffset = %v, want %d", table, v, rows)
		}
		if v := value(t, after, "fluss_tabletserver_table_bucket_log_highWatermark", bucket(table)); v != rows {
			t.Errorf("%s highWatermark = %v, want %d", table, v, rows)
		}
		if v := value(t, after, "fluss_tabletserver_table_bucket_log_numSegments", bucket(table)); v != 1 {
			t.Errorf("%s numSegments = %v, want 1", table, v)
		}
		if v := value(t, after, "fluss_tabletserver_table_bucket_logicalStorage_logSize", bucket(table)); v <= 0 {
			t.Errorf("%s logSize = %v, want > 0", table, v)
		}
		if v := value(t, after, "fluss_tabletserver_table_bucket_log_writerIdCount", bucket(table)); v != 1 {
			t.Errorf("%s writerIdCount = %v, want 1 (one idempotent writer)", table, v)
		}
	}
	if find(after, "fluss_tabletserver_table_bucket_logicalStorage_kvSize", bucket("users")) == nil {
		t.Error("no kvSize for the primary-key table")
	}
	if find(after, "fluss_tabletserver_table_bucket_logicalStorage_kvSize", bucket("events")) != nil {
		t.Error("kvSize reported for a log table")
	}
	for name, want := range map[string]float64{
		"fluss_coordinator_tableCount":         2,
		"fluss_coordinator_bucketCount":        2,
		"fluss_coordinator_offlineBucketCount": 0,
		"fluss_coordinator_etcd_up":            1,
		"fluss_tabletserver_leaderCount":       2,
		"fluss_tabletserver_writerIdCount":     2,
	} {
		if v := value(t, after, name, nil); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if v := value(t, after, "fluss_tabletserver_connectionCount", nil); v != 0 {
		// The client closed its connections; the server notices asynchronously.
		t.Logf("connectionCount after close = %v", v)
	}
	if v := value(t, after, "fluss_tabletserver_connections_total", nil); v < 1 {
		t.Errorf("connections_total = %v, want >= 1", v)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "fluss_tabletserver_pebble_levelFiles"} {
		if after[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
}

func TestAuthenticationFailuresCounted(t *testing.T) {
	n := start(t, func(c *config.Config) {
		c.SecurityProtocolMap = map[string]string{"FLUSS": "SASL"}
		c.PlainJAASConfig = `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_admin="secret";`
	})
	ctx := t.Context()
	cfg := fluss.Config{BootstrapServers: n.Addr("coordinator"), SecurityProtocol: "sasl", SASLUsername: "admin", SASLPassword: "wrong"}
	if _, err := fluss.Connect(ctx, cfg); fluss.CodeOf(err) != fluss.ErrAuthenticate {
		t.Fatalf("connect with a wrong password: %v", err)
	}
	fams := scrape(t, n)
	if v := value(t, fams, "fluss_coordinator_authenticationFailures_total", nil); v != 1 {
		t.Errorf("authenticationFailures_total = %v, want 1", v)
	}
	cfg.SASLPassword = "secret"
	conn, err := fluss.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if v := value(t, scrape(t, n), "fluss_coordinator_authenticationFailures_total", nil); v != 1 {
		t.Errorf("authenticationFailures_total after a good login = %v, want still 1", v)
	}
}

func TestHealthAndPprof(t *testing.T) {
	n := start(t, nil)
	if code, body := get(t, n.http+"/healthz"); code != 200 {
		t.Errorf("/healthz = %d %s", code, body)
	}
	if code, body := get(t, n.http+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d %s", code, body)
	}
	if code, _ := get(t, n.http+"/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ without debug.pprof.enabled = %d, want 404", code)
	}
	p := start(t, func(c *config.Config) { c.PprofEnabled = true })
	if code, body := get(t, p.http+"/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/goroutine = %d", code)
	}
}

func TestHTTPListenerOffByDefault(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1"}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1"}}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if a := n.HTTPAddr(); a != "" {
		t.Errorf("HTTP listener on %s although metrics.reporters is unset", a)
	}
}

// A FETCH_LOG parked in a long poll shows in delayedFetchCount while it waits, and leaves it
// when it is answered.
func TestLongPollCountedWhileParked(t *testing.T) {
	n := start(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: n.Addr("coordinator"), ScannerFetchMaxWait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := fluss.NewTablePath("fluss", "idle")
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{fluss.NewColumn("id", fluss.Int())}), BucketCount: 1}
	if err := conn.Admin().CreateTable(ctx, path, desc, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if v := value(t, scrape(t, n), "fluss_tabletserver_delayedFetchCount", nil); v != 0 {
		t.Fatalf("delayedFetchCount before any fetch = %v", v)
	}
	sc, err := tbl.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(ctx, 0, fluss.EarliestOffset); err != nil {
		t.Fatal(err)
	}
	polled := make(chan []fluss.ScanRecord, 1)
	go func() {
		recs, _ := sc.Poll(ctx, 25*time.Second)
		polled <- recs
	}()
	// The empty table parks the fetch; wait until the scrape sees it.
	for v := 0.0; v != 1; v = value(t, scrape(t, n), "fluss_tabletserver_delayedFetchCount", nil) {
		if ctx.Err() != nil {
			t.Fatalf("delayedFetchCount never reached 1 (last %v)", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A write answers the parked fetch.
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, fluss.Row{int32(1)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if recs := <-polled; len(recs) != 1 {
		t.Fatalf("poll returned %d records", len(recs))
	}
	// The scanner may have parked its next fetch already; closing the connection ends it.
	sc.Close()
	conn.Close()
	for v := -1.0; v != 0; v = value(t, scrape(t, n), "fluss_tabletserver_delayedFetchCount", nil) {
		if ctx.Err() != nil {
			t.Fatalf("delayedFetchCount stayed at %v after the client left", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// /readyz, offlineBucketCount and clusterHealthStatus say what GET_CLUSTER_HEALTH says.
func TestReadinessAgreesWithClusterHealth(t *testing.T) {
	n := start(t, nil)
	traffic(t, n, 3)
	wc, err := wire.Dial(t.Context(), n.Addr("coordinator"), wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	var h flusspb.GetClusterHealthResponse
	if err := wc.Call(t.Context(), wire.GetClusterHealth, &flusspb.GetClusterHealthRequest{}, &h); err != nil {
		t.Fatal(err)
	}
	if h.GetStatus() != 0 || h.GetNumLeaderReplicas() != 2 {
		t.Fatalf("GET_CLUSTER_HEALTH = %v, want GREEN with 2 leaders", &h)
	}
	if code, body := get(t, n.http+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d %s although the cluster is GREEN", code, body)
	}
	fams := scrape(t, n)
	if v := value(t, fams, "fluss_coordinator_clusterHealthStatus", nil); v != float64(h.GetStatus()) {
		t.Errorf("clusterHealthStatus = %v, GET_CLUSTER_HEALTH says %d", v, h.GetStatus())
	}
	if v := value(t, fams, "fluss_coordinator_offlineBucketCount", nil); v != float64(h.GetNumLeaderReplicas()-h.GetActiveLeaderReplicas()) {
		t.Errorf("offlineBucketCount = %v, GET_CLUSTER_HEALTH says %d of %d active", v, h.GetActiveLeaderReplicas(), h.GetNumLeaderReplicas())
	}
}
