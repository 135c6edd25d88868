package goclient

import (
	"context"
	"testing"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server/servertest"
)

func startServer(t *testing.T) string { return servertest.Start(t) }

// TestRun runs every workload for a few hundred rows against a real server and checks the
// counts (never the timings), then that the rows stored are the benchmark's rows, the ones
// tools/javabench and `strom bench` write.
func TestRun(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{Bootstrap: addr, Rows: 300, Columns: 6, StringBytes: 12, Buckets: 3, Concurrency: 2,
		Lookups: 40, BatchBytes: 4 << 10, Modes: []string{"append", "scan", "upsert", "lookup"},
		MaxDuration: time.Minute, Database: "gc", Seed: 1}
	var got []Result
	if err := Run(ctx, o, func(r Result) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		mode string
		rows int64
	}{{"append", 300}, {"scan", 300}, {"upsert", 300}, {"lookup", 40}}
	if len(got) != len(want) {
		t.Fatalf("results %+v", got)
	}
	for i, w := range want {
		r := got[i]
		if r.Client != "go" || r.Mode != w.mode || r.Rows != w.rows || r.Truncated || r.Seconds <= 0 || r.RowsPerSec <= 0 || r.CPUSeconds < 0 {
			t.Errorf("result %d: %+v, want %s of %d rows", i, r, w.mode, w.rows)
		}
	}
	if lk := got[3]; lk.Misses != 0 || lk.QPS <= 0 || lk.P50Ms <= 0 || lk.P99Ms < lk.P50Ms {
		t.Errorf("lookup %+v", lk)
	}

	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	table, err := conn.Table(ctx, fluss.TablePath{Database: "gc", Table: "go_kv"})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := table.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	bcfg := o.benchConfig()
	src := bench.NewRowSource(bcfg)
	for _, id := range []int64{0, 7, 299} {
		row, err := lk.Lookup(ctx, fluss.Row{id})
		if err != nil {
			t.Fatal(err)
		}
		vals := src.Row(id)
		if len(row) != len(vals) {
			t.Fatalf("key %d: %d columns", id, len(row))
		}
		for i, v := range vals {
			var wantV any = v.I
			if bcfg.IsString(i) {
				wantV = string(v.B)
			}
			if row[i] != wantV {
				t.Errorf("key %d column %d: %v, want %v", id, i, row[i], wantV)
			}
		}
	}
}
