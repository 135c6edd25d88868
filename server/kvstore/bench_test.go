package kvstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/logstore"
)

const benchRows = 100

// BenchmarkPut measures PUT_KV of 100-row batches updating existing keys (FULL image: read,
// decode old and new, -U/+U Arrow changelog with ZSTD, log append without fsync, Pebble
// commit). ns/op is per batch; see the rows/s metric.
func BenchmarkPut(b *testing.B) {
	h := newHarness(b, usersTable(nil))
	batches := make([][]rec, 8)
	for i := range batches {
		for j := 0; j < benchRows; j++ {
			batches[i] = append(batches[i], up(int64(j+i*7), fmt.Sprintf("name-%d", j), j))
		}
	}
	h.put(nil, batches[0]...)
	kvs := make([][]byte, len(batches))
	for i := range batches {
		kvs[i] = h.kvBatch(-1, -1, batches[i]...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.tab.putWait(kvs[i%len(kvs)], WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkLookup measures 100-key lookups against 10k rows.
func BenchmarkLookup(b *testing.B) {
	h := newHarness(b, usersTable(nil))
	for i := 0; i < 100; i++ {
		var recs []rec
		for j := 0; j < 100; j++ {
			recs = append(recs, up(int64(i*100+j), "n", j))
		}
		h.put(nil, recs...)
	}
	c := h.tab.tbl
	keys := make([][]byte, benchRows)
	for i := range keys {
		keys[i], _ = row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: int64(i * 97)}})
	}
	var out [][]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if out, err = h.tab.Lookup(keys, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkPutNewKeys measures PUT_KV of 1000-row batches of new keys (the upsert workload of
// `strom bench`: read-before-write misses, +I changelog with ZSTD, log append without fsync,
// Pebble apply). ns/op is per batch; see the rows/s metric.
func BenchmarkPutNewKeys(b *testing.B) {
	const rows = 1000
	h := newHarnessRowCache(b, usersTable(nil), logstore.FlushInterval(0), benchRowCacheBytes())
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	id := int64(0)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		recs := make([]rec, rows)
		for j := range recs {
			recs[j] = up(id, "name-of-sixteen!", id*7)
			id++
		}
		kv := h.kvBatch(-1, -1, recs...)
		b.StartTimer()
		if _, err := h.tab.putWait(kv, WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0 // includes the untimed batch building
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*rows), "cpu-µs/row")
}

// wideTable is the table of `strom bench` (cmd/strom/bench): id BIGINT primary key, then
// STRING columns of 16 bytes at odd positions and BIGINT columns at even ones, 10 in all,
// Arrow changelog without compression.
func wideTable() Table {
	cols := []metadata.Column{{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}}}
	for i := 1; i < 10; i++ {
		if i%2 == 1 {
			cols = append(cols, metadata.Column{Name: fmt.Sprintf("s%d", i), Type: metadata.DataType{Root: metadata.String}})
		} else {
			cols = append(cols, metadata.Column{Name: fmt.Sprintf("v%d", i), Type: metadata.DataType{Root: metadata.BigInt}})
		}
	}
	return Table{ID: 7, SchemaID: 1, Schema: metadata.Schema{Columns: cols, PrimaryKey: []string{"id"}},
		Config: metadata.TableConfig{LogFormat: metadata.LogFormatArrow, Compression: metadata.CompressionNone}}
}

// wideWords is a pool of space-separated random words the STRING values of wideBatch are cut
// from, like `strom bench`'s data: some structure for the compressor, no long repeats.
var wideWords = func() []byte {
	s := uint64(42)
	words := make([][]byte, 512)
	for i := range words {
		w := make([]byte, 3+splitmix(&s)%8)
		for j := range w {
			w[j] = 'a' + byte(splitmix(&s)%26)
		}
		words[i] = w
	}
	var pool []byte
	for len(pool) < 1<<20+16 {
		pool = append(append(pool, words[splitmix(&s)%512]...), ' ')
	}
	return pool
}()

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// wideBatch encodes the rows ids[i] of wideTable with pseudo-random values derived from seed.
func wideBatch(tb testing.TB, c *compiled, ids []int64, seed int64) record.KvBatch {
	tb.Helper()
	krs := make([]record.KvRecord, len(ids))
	d := make([]row.Datum, 10)
	for i, id := range ids {
		s := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(id)
		d[0] = row.Datum{I: id}
		for j := 1; j < 10; j++ {
			x := splitmix(&s)
			if j%2 == 1 {
				off := int(x % (1 << 20))
				d[j] = row.Datum{B: wideWords[off : off+16]}
			} else {
				d[j] = row.Datum{I: int64(x % 1_000_000)}
			}
		}
		k, err := row.EncodeKey(nil, c.keyTypes, d[:1])
		if err != nil {
			tb.Fatal(err)
		}
		rb, err := row.AppendCompactedRow(nil, c.types, d)
		if err != nil {
			tb.Fatal(err)
		}
		krs[i] = record.KvRecord{Key: k, Row: rb}
	}
	b, err := record.ParseKvBatch(record.AppendKvBatch(nil, record.KvHeader{SchemaID: 1, WriterID: -1, BatchSequence: -1}, krs...))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUpdateLarge measures updates of existing keys (FULL changelog: read, -U/+U) on a
// table of 300k rows, ~40 MB in Pebble, against a 16 MiB block cache, as `strom bench update`
// does on a 1M-row table with the default 64 MiB cache: 250-row batches (1,000-row requests
// over 4 buckets) rewriting keys 0..N-1 in order, so most reads miss the block cache. Run it
// with -benchtime 1200x (one pass over the table). STROM_BENCH_CACHE_MIB and
// STROM_BENCH_ROW_CACHE_MIB (benchRowCacheBytes) change the block and row cache sizes. ns/op is per batch;
// cpu-µs/row counts every goroutine of the process (compactions included) and is less
// sensitive than wall time to other load on the machine.
func BenchmarkUpdateLarge(b *testing.B) {
	const (
		rows  = 300_000
		batch = 250
	)
	tab := openWideBench(b, 16, benchRowCacheBytes()) // STROM_BENCH_CACHE_MIB=64 to compare cache sizes
	c := tab.tbl
	ids := make([]int64, batch)
	load := func(seed int64, from int) {
		for j := range ids {
			ids[j] = int64((from + j) % rows)
		}
		if _, err := tab.putWait(wideBatch(b, c, ids, seed), WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < rows; i += batch {
		load(1, i)
	}
	kvs := make([]record.KvBatch, rows/batch)
	for i := range kvs {
		for j := range ids {
			ids[j] = int64(i*batch + j)
		}
		kvs[i] = wideBatch(b, c, ids, 2+int64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := tab.putWait(kvs[i%len(kvs)], WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*batch), "cpu-µs/row")

}

// benchRowCacheBytes is Options.RowCacheBytes as STROM_BENCH_ROW_CACHE_MIB sets it: unset, the
// default (which holds BenchmarkUpdateLarge's table); a size in MiB, e.g. one smaller than the
// table; -1 turns the row cache off.
func benchRowCacheBytes() int64 {
	v, err := strconv.ParseInt(os.Getenv("STROM_BENCH_ROW_CACHE_MIB"), 10, 64)
	switch {
	case err != nil || v == 0:
		return 0
	case v < 0:
		return -1
	}
	return v << 20
}

// BenchmarkLookupAfterLoad measures single-key lookups of random existing keys right after
// 1M new keys were upserted in 1,000-row batches (BenchmarkPutNewKeys's load): the table is
// spread over the memtables, L0 and the levels below as the load left them, compactions may
// still run, and the 256k distinct keys read touch more blocks than the block cache holds.
// ns/op is per key.
func BenchmarkLookupAfterLoad(b *testing.B) {
	const loadRows, batch = 1_000_000, 1000
	h := newHarnessRowCache(b, usersTable(nil), logstore.FlushInterval(0), benchRowCacheBytes())
	for id := int64(0); id < loadRows; id += batch {
		recs := make([]rec, batch)
		for j := range recs {
			recs[j] = up(id+int64(j), "name-of-sixteen!", id*7)
		}
		if _, err := h.tab.putWait(h.kvBatch(-1, -1, recs...), WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	c := h.tab.tbl
	keys := make([][]byte, 1<<18) // far more blocks than the block cache holds
	s := uint64(7)
	for i := range keys {
		keys[i], _ = row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: int64(splitmix(&s) % loadRows)}})
	}
	var out [][]byte
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		var err error
		if out, err = h.tab.Lookup(keys[i%len(keys):i%len(keys)+1], out); err != nil {
			b.Fatal(err)
		}
		if out[0] == nil {
			b.Fatal("an upserted key is missing")
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/key")
}

// openWideBench opens a store and a tablet of wideTable on a fresh log for the large-table
// benchmarks, closed when b ends: a block cache of defaultCacheMiB unless STROM_BENCH_CACHE_MIB
// sets one, and a row cache of rowCacheBytes (Options.RowCacheBytes).
func openWideBench(b *testing.B, defaultCacheMiB, rowCacheBytes int64) *Tablet {
	b.Helper()
	dir := b.TempDir()
	lg, err := logstore.Open(context.Background(), filepath.Join(dir, "log"), logstore.Options{Logger: discard(), FlushPolicy: logstore.FlushInterval(0)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lg.Close() })
	cacheMiB := defaultCacheMiB
	if v, err := strconv.ParseInt(os.Getenv("STROM_BENCH_CACHE_MIB"), 10, 64); err == nil && v > 0 {
		cacheMiB = v
	}
	st, err := Open(filepath.Join(dir, "kv"), Options{Logger: discard(), CacheBytes: cacheMiB << 20, RowCacheBytes: rowCacheBytes})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	tab, err := st.OpenTablet(context.Background(), testBucket, wideTable(), lg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tab.Close)
	return tab
}
