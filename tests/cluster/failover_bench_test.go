package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/clustertest"
)

// BenchmarkLeaderFailover measures the failover time of a bucket: from kill -9 of its leader
// to the first acknowledged (acks=all) append after it, with the Go client retrying by
// itself. Each iteration kills the current leader, waits for the write, restarts the victim
// and lets it catch up. Run it with `make bench-cluster` (-benchtime=20x: 20 kills); it
// reports the median and the worst failover in ms.
func BenchmarkLeaderFailover(b *testing.B) {
	c := clustertest.StartCluster(b, stromBin, clustertest.ClusterOptions{Set: faultOptions})
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
	path := fluss.TablePath{Database: "bench", Table: "failover"}
	desc := logTable()
	desc.BucketCount = 1
	if err := admin.CreateTable(ctx, path, desc, false); err != nil {
		b.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	w, err := table.NewAppend().CreateWriter()
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	write := func(id int64) error {
		r, err := w.Append(ctx, fluss.Row{id, "payload"})
		if err != nil {
			return err
		}
		return r.Wait(ctx)
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
