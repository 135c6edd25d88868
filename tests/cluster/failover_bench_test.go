package cluster_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// BenchmarkLeaderFailover measures the failover time of a bucket: from kill -9 of its leader
// to the first acknowledged (acks=all) append after it, with the Go client retrying by
// itself. Each iteration kills the current leader, waits for the write, restarts the victim
// and lets it catch up. Run it with `make bench-cluster` (-benchtime=20x: 20 kills); it
// reports the median and the worst failover in ms.
func BenchmarkLeaderFailover(b *testing.B) {
	// FAILOVER_LEASE_TTL=5s measures with other leases than the tests' 2 s (5 s: the defaults).
	set := maps.Clone(faultOptions)
	if ttl := os.Getenv("FAILOVER_LEASE_TTL"); ttl != "" {
		set["tablet-server.lease-ttl"], set["coordinator.lease-ttl"] = ttl, ttl
	}
	c := clustertest.StartCluster(b, stromBin, clustertest.ClusterOptions{Set: set})
	ctx := context.Background()
	waitFormed(b, ctx, c)
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: c.Bootstrap(), WriterBatchTimeout: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	admin := conn.Admin()
	if err := admin.CreateDatabase(ctx, "bench", nil, true); err != nil {
		b.Fatal(err)
	}
	// FAILOVER_PK_ROWS=N measures a primary-key bucket holding N rows instead of a log bucket
	// (docs/benchmarks.md reports it for 1M rows); the first write after a kill is an upsert.
	pkRows, _ := strconv.Atoi(os.Getenv("FAILOVER_PK_ROWS"))
	path := fluss.TablePath{Database: "bench", Table: "failover"}
	desc := logTable()
	if pkRows > 0 {
		desc = pkTable()
	}
	desc.BucketCount = 1
	if err := admin.CreateTable(ctx, path, desc, false); err != nil {
		b.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	var write func(id int64) error
	if pkRows > 0 {
		w, err := table.NewUpsert().CreateWriter()
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		for id := range int64(pkRows) {
			if _, err := w.Upsert(ctx, fluss.Row{id, id}); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		write = func(id int64) error {
			r, err := w.Upsert(ctx, fluss.Row{id % int64(pkRows), id})
			if err != nil {
				return err
			}
			return r.Wait(ctx)
		}
	} else {
		w, err := table.NewAppend().CreateWriter()
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		write = func(id int64) error {
			r, err := w.Append(ctx, fluss.Row{id, "payload"})
			if err != nil {
				return err
			}
			return r.Wait(ctx)
		}
	}
	if err := write(0); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	b.ResetTimer()
	for i := range b.N {
		leaders, err := admin.BucketLeaders(ctx, path, "")
		if err != nil {
			b.Fatal(err)
		}
		victim := c.Node(leaders[0].ID)
		start := time.Now()
		victim.Kill()
		if err := write(int64(i + 1)); err != nil {
			b.Fatalf("first write after killing node %d: %v", victim.ID, err)
		}
		times = append(times, time.Since(start))
		b.StopTimer()
		victim.Start()
		victim.WaitReady(60 * time.Second)
		// Let it rejoin the ISR before the next kill, so min ISR 2 holds with one node down.
		time.Sleep(3 * time.Second)
		b.StartTimer()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms/failover")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max-ms/failover")
}
