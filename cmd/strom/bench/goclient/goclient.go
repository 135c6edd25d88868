// Package goclient is the Go-client half of `make bench-clients`: the workloads of
// tools/javabench (append, scan, upsert, lookup) driven through the public API of package
// fluss, the way an application uses it — one row per Append/Upsert call then Flush, lookups
// from a fixed number of goroutines — so that the Go client and the Java client
// (fluss-client) are measured on the same server, rows and settings. The rows are those of
// cmd/strom/bench (bench.RowSource), which tools/javabench computes identically.
package goclient

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
	"github.com/stromdb/strom/fluss"
)

// Options is one run of the Go client. Field meanings and defaults match the flags of
// tools/javabench.
type Options struct {
	Bootstrap   string
	Rows        int
	Columns     int
	StringBytes int
	Buckets     int
	Concurrency int // lookups in flight
	Lookups     int
	BatchBytes  int // Config.WriterBatchSize (the Java client's client.writer.batch-size)
	Modes       []string
	MaxDuration time.Duration // bound of the scan and lookup loops
	Database    string
	Seed        uint64
}

// Result is one workload's outcome, printed as one JSON line; the field names are those
// tools/javabench prints and cmd/strom/bench/compare parses.
type Result struct {
	Client     string  `json:"client"`
	Mode       string  `json:"mode"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	CPUSeconds float64 `json:"cpu_s"` // user+system time of this process during the workload
	QPS        float64 `json:"qps,omitempty"`
	P50Ms      float64 `json:"p50_ms,omitempty"`
	P99Ms      float64 `json:"p99_ms,omitempty"`
	MaxMs      float64 `json:"max_ms,omitempty"`
	Misses     int64   `json:"misses,omitempty"`
	Truncated  bool    `json:"truncated,omitempty"`
}

// Run performs the requested workloads in the order append, scan, upsert, lookup, calling
// emit with each result.
func Run(ctx context.Context, o Options, emit func(Result)) error {
	want := map[string]bool{}
	for _, m := range o.Modes {
		want[m] = true
	}
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: o.Bootstrap, WriterBatchSize: o.BatchBytes})
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Admin().CreateDatabase(ctx, o.Database, nil, true); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	src := bench.NewRowSource(o.benchConfig())
	measure := func(mode string, f func() (Result, error)) error {
		cpu := cpuTime()
		r, err := f()
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		r.Client, r.Mode, r.CPUSeconds = "go", mode, (cpuTime() - cpu).Seconds()
		if r.Seconds > 0 {
			r.RowsPerSec = float64(r.Rows) / r.Seconds
		}
		emit(r)
		return nil
	}
	if want["append"] || want["scan"] {
		t, err := o.table(ctx, conn, "go_log", false)
		if err != nil {
			return err
		}
		if err := measure("append", func() (Result, error) { return o.appendRows(ctx, t, src) }); err != nil {
			return err
		}
		if want["scan"] {
			if err := measure("scan", func() (Result, error) { return o.scan(ctx, t) }); err != nil {
				return err
			}
		}
	}
	if want["upsert"] || want["lookup"] {
		t, err := o.table(ctx, conn, "go_kv", true)
		if err != nil {
			return err
		}
		if err := measure("upsert", func() (Result, error) { return o.upsert(ctx, t, src) }); err != nil {
			return err
		}
		if want["lookup"] {
			if err := measure("lookup", func() (Result, error) { return o.lookup(ctx, t) }); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *Options) benchConfig() bench.Config {
	cfg := bench.DefaultConfig()
	cfg.Columns, cfg.StringBytes, cfg.Seed = o.Columns, o.StringBytes, o.Seed
	return cfg
}

func (o *Options) table(ctx context.Context, conn *fluss.Connection, name string, pk bool) (*fluss.Table, error) {
	cfg := o.benchConfig()
	key := fluss.BigInt()
	key.NotNull = true
	cols := []fluss.Column{fluss.NewColumn("id", key)}
	for i := 1; i < o.Columns; i++ {
		if cfg.IsString(i) {
			cols = append(cols, fluss.NewColumn(fmt.Sprintf("s%d", i), fluss.String()))
		} else {
			cols = append(cols, fluss.NewColumn(fmt.Sprintf("v%d", i), fluss.BigInt()))
		}
	}
	// Uncompressed Arrow batches, as `strom bench` and the side-by-side benchmark write (the
	// Fluss default, ZSTD, would make both clients spend most of their time compressing).
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema(cols), BucketCount: int32(o.Buckets),
		Properties: map[string]string{"table.log.arrow.compression.type": "NONE"}}
	if pk {
		desc.Schema = fluss.NewSchema(cols, "id")
		desc.BucketKeys = []string{"id"}
	}
	path := fluss.TablePath{Database: o.Database, Table: name}
	if err := conn.Admin().CreateTable(ctx, path, desc, true); err != nil {
		return nil, fmt.Errorf("create table %s: %w", name, err)
	}
	return conn.Table(ctx, path)
}

// fullRow converts the generator's values to a fluss.Row (a new one per call: the writer
// may hold it until the batch is encoded).
func (o *Options) fullRow(src *bench.RowSource, id int64) fluss.Row {
	vals := src.Row(id)
	r := make(fluss.Row, len(vals))
	cfg := o.benchConfig()
	r[0] = vals[0].I
	for i := 1; i < len(vals); i++ {
		if cfg.IsString(i) {
			r[i] = vals[i].B
		} else {
			r[i] = vals[i].I
		}
	}
	return r
}

// write is the append and upsert loop: one call per row, every 1000th result checked,
// then Flush.
func (o *Options) write(ctx context.Context, src *bench.RowSource, put func(context.Context, fluss.Row) (*fluss.WriteResult, error), flush func(context.Context) error) (Result, error) {
	var checked []*fluss.WriteResult
	start := time.Now()
	for id := range int64(o.Rows) {
		wr, err := put(ctx, o.fullRow(src, id))
		if err != nil {
			return Result{}, fmt.Errorf("row %d: %w", id, err)
		}
		if id%1000 == 999 {
			checked = append(checked, wr)
		}
	}
	if err := flush(ctx); err != nil {
		return Result{}, fmt.Errorf("flush: %w", err)
	}
	elapsed := time.Since(start)
	for _, wr := range checked {
		if err := wr.Wait(ctx); err != nil {
			return Result{}, err
		}
	}
	return Result{Rows: int64(o.Rows), Seconds: elapsed.Seconds()}, nil
}

func (o *Options) appendRows(ctx context.Context, t *fluss.Table, src *bench.RowSource) (Result, error) {
	w, err := t.NewAppend().CreateWriter()
	if err != nil {
		return Result{}, err
	}
	defer w.Close()
	return o.write(ctx, src, w.Append, w.Flush)
}

func (o *Options) upsert(ctx context.Context, t *fluss.Table, src *bench.RowSource) (Result, error) {
	w, err := t.NewUpsert().CreateWriter()
	if err != nil {
		return Result{}, err
	}
	defer w.Close()
	return o.write(ctx, src, w.Upsert, w.Flush)
}

func (o *Options) scan(ctx context.Context, t *fluss.Table) (Result, error) {
	sc, err := t.NewScan().CreateLogScanner()
	if err != nil {
		return Result{}, err
	}
	defer sc.Close()
	start := time.Now()
	offsets := map[int32]int64{}
	for b := range int32(o.Buckets) {
		offsets[b] = fluss.EarliestOffset
	}
	if err := sc.SubscribeBuckets(ctx, offsets); err != nil {
		return Result{}, err
	}
	var read, sum int64
	for read < int64(o.Rows) {
		if time.Since(start) > o.MaxDuration {
			return Result{}, fmt.Errorf("%d of %d rows after %s", read, o.Rows, o.MaxDuration)
		}
		recs, err := sc.Poll(ctx, time.Second)
		if err != nil {
			return Result{}, err
		}
		for _, r := range recs {
			sum += r.Row[0].(int64) // touch every row, as an application would
			read++
		}
	}
	elapsed := time.Since(start)
	if sum < 0 {
		return Result{}, fmt.Errorf("impossible id sum %d", sum)
	}
	return Result{Rows: read, Seconds: elapsed.Seconds()}, nil
}

// lookup runs Lookups single-key lookups of random written keys from Concurrency goroutines
// (the Go client's blocking Lookup; its lookups in flight are merged into batches by the
// client, as the Java client's async Lookuper merges its futures).
func (o *Options) lookup(ctx context.Context, t *fluss.Table) (Result, error) {
	lk, err := t.NewLookup().CreateLookuper()
	if err != nil {
		return Result{}, err
	}
	keys := bench.LookupKeys(o.Seed, o.Lookups, o.Rows)
	lat := make([]time.Duration, len(keys))
	var next, misses, done atomic.Int64
	var truncated atomic.Bool
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.MaxDuration)
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(keys)) {
					return
				}
				if time.Now().After(deadline) {
					truncated.Store(true)
					return
				}
				t0 := time.Now()
				row, err := lk.Lookup(ctx, fluss.Row{keys[i]})
				lat[i] = time.Since(t0)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if row == nil {
					misses.Add(1)
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Result{}, firstErr
	}
	var ok []time.Duration
	for _, d := range lat {
		if d > 0 {
			ok = append(ok, d)
		}
	}
	slices.Sort(ok)
	n := done.Load()
	r := Result{Rows: n, Seconds: elapsed.Seconds(), QPS: float64(n) / elapsed.Seconds(),
		Misses: misses.Load(), Truncated: truncated.Load()}
	r.P50Ms, r.P99Ms = percentileMs(ok, 0.50), percentileMs(ok, 0.99)
	if len(ok) > 0 {
		r.MaxMs = float64(ok[len(ok)-1]) / 1e6
	}
	return r, nil
}

// percentileMs is the nearest-rank percentile of sorted durations, in milliseconds.
func percentileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(max(int(float64(len(sorted))*q+0.999999)-1, 0), len(sorted)-1)
	return float64(sorted[i]) / 1e6
}

// cpuTime is the user+system time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
