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
//
// FAILOVER_FAULT=stop pauses the leader (SIGSTOP) instead and resumes it after the write: a
// paused process whose connections stay open. A request the client already sent to it waits
// for the client's request timeout whatever the servers do, so there each write attempt is
// bounded by 1 s and retried through a fresh connection; the benchmark also reports when the metadata first named
// another leader (moved-ms), the server side of the failover.
//
// FAILOVER_VICTIM=coordinator (with FAILOVER_FAULT=stop) faults the node that is both the
// active coordinator and the bucket's leader: each iteration writes to a one-bucket table
// led from the active coordinator's node (creating another when none is). FAILOVER_STANDBYS=off
// measures without the standbys' heartbeats of the active coordinator
// (coordinator.heartbeat.standbys: false, the lease alone, as before them).
func BenchmarkLeaderFailover(b *testing.B) {
	// FAILOVER_LEASE_TTL=5s measures with other leases than the tests' 2 s (5 s: the defaults).
	set := maps.Clone(faultOptions)
	if ttl := os.Getenv("FAILOVER_LEASE_TTL"); ttl != "" {
		set["tablet-server.lease-ttl"], set["coordinator.lease-ttl"] = ttl, ttl
	}
	// FAILOVER_HEARTBEATS=off measures without heartbeat fencing (the lease alone, as before it).
	if os.Getenv("FAILOVER_HEARTBEATS") == "off" {
		set["coordinator.heartbeat.interval"] = "0"
	}
	if os.Getenv("FAILOVER_STANDBYS") == "off" {
		set["coordinator.heartbeat.standbys"] = "false"
	}
	onCoordinator := os.Getenv("FAILOVER_VICTIM") == "coordinator"
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
	pause := os.Getenv("FAILOVER_FAULT") == "stop"
	if pause && pkRows > 0 {
		b.Fatal("FAILOVER_FAULT=stop measures a log bucket; unset FAILOVER_PK_ROWS")
	}
	if onCoordinator && !pause {
		b.Fatal("FAILOVER_VICTIM=coordinator needs FAILOVER_FAULT=stop")
	}
	if pause {
		// A client keeps its requests queued on its connection to the paused leader until its
		// request timeout; each attempt here is a fresh connection (its own metadata) bounded
		// by 1 s, so the time measured is the cluster's, not the client's timeout.
		write = func(id int64) error {
			for ctx.Err() == nil {
				actx, cancel := context.WithTimeout(ctx, time.Second)
				err := freshAppend(actx, c.Bootstrap(), path, id)
				cancel()
				if err == nil {
					return nil
				}
			}
			return ctx.Err()
		}
	}
	var times, moved []time.Duration
	b.ResetTimer()
	for i := range b.N {
		var victim *clustertest.Node
		if onCoordinator {
			b.StopTimer()
			path, victim = coordinatorLedTable(b, ctx, c, conn, "bench", "coord_led")
			b.StartTimer()
		} else {
			leaders, err := admin.BucketLeaders(ctx, path, "")
			if err != nil {
				b.Fatal(err)
			}
			victim = c.Node(leaders[0].ID)
		}
		start := time.Now()
		movedCh := make(chan time.Duration, 1)
		if pause {
			victim.Pause()
			go func() { movedCh <- leaderMoved(ctx, admin, path, victim.ID, start) }()
		} else {
			victim.Kill()
		}
		if err := write(int64(i + 1)); err != nil {
			b.Fatalf("first write after the fault of node %d: %v", victim.ID, err)
		}
		times = append(times, time.Since(start))
		b.StopTimer()
		if pause {
			moved = append(moved, <-movedCh)
			victim.Resume()
		} else {
			victim.Start()
			victim.WaitReady(60 * time.Second)
		}
		// Let it rejoin the ISR before the next kill, so min ISR 2 holds with one node down.
		time.Sleep(3 * time.Second)
		b.StartTimer()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms/failover")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max-ms/failover")
	if len(moved) > 0 {
		slices.Sort(moved)
		b.ReportMetric(float64(moved[len(moved)/2].Milliseconds()), "p50-moved-ms")
		b.ReportMetric(float64(moved[len(moved)-1].Milliseconds()), "max-moved-ms")
	}
}

// freshAppend appends one row acks=all through a connection of its own, all under ctx.
func freshAppend(ctx context.Context, bootstrap string, path fluss.TablePath, id int64) error {
	done := make(chan error, 1)
	go func() {
		conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: bootstrap, WriterBatchTimeout: time.Millisecond,
			ConnectTimeout: 500 * time.Millisecond, RequestTimeout: time.Second})
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		table, err := conn.Table(ctx, path)
		if err != nil {
			done <- err
			return
		}
		w, err := table.NewAppend().CreateWriter()
		if err != nil {
			done <- err
			return
		}
		defer w.Close()
		r, err := w.Append(ctx, fluss.Row{id, "payload"})
		if err == nil {
			err = r.Wait(ctx)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaderMoved polls the metadata until bucket 0 of path is led by another server than old,
// and returns the time since start (or since start until the poll gave up, after 60 s).
func leaderMoved(ctx context.Context, admin *fluss.Admin, path fluss.TablePath, old int32, start time.Time) time.Duration {
	for time.Since(start) < time.Minute {
		actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		leaders, err := admin.BucketLeaders(actx, path, "")
		cancel()
		if err == nil && leaders[0].ID != old {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}
