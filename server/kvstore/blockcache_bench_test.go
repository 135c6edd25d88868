package kvstore

import (
	"math/rand/v2"
	"testing"

	"github.com/stromdb/strom/internal/row"
)

// BenchmarkLookupLarge measures single-key lookups of random existing keys in a table larger
// than the block cache, as `strom bench lookup` does after 1M upserts (a table of ~130 MB of
// rows against a 64 MiB cache): 300k rows of BenchmarkUpdateLarge's shape (~40 MB in Pebble),
// flushed and compacted, against a 20 MiB block cache by default. STROM_BENCH_CACHE_MIB sets
// the cache, to compare sizes at the same table-to-cache ratio as the server's defaults
// (docs/benchmarks.md, "Resident memory: who holds it"). ns/op is per key; cpu-µs/key counts
// every goroutine of the process.
func BenchmarkLookupLarge(b *testing.B) {
	const (
		rows  = 300_000
		batch = 250
	)
	tab := openWideBench(b, 20, -1)
	st := tab.store
	ids := make([]int64, batch)
	for i := 0; i < rows; i += batch {
		for j := range ids {
			ids[j] = int64(i + j)
		}
		if _, err := tab.putWait(wideBatch(b, tab.tbl, ids, 1), WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.db.Flush(); err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, 1<<18) // more distinct keys than the cache has blocks
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i], _ = row.EncodeKey(nil, tab.tbl.keyTypes, []row.Datum{{I: rng.Int64N(rows)}})
	}
	one := make([][]byte, 1)
	var out [][]byte
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		one[0] = keys[i%len(keys)]
		if out, err = tab.Lookup(one, out); err != nil {
			b.Fatal(err)
		}
		if out[0] == nil {
			b.Fatal("existing key not found")
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/key")
}
