package kvstore

import (
	"fmt"
	"testing"

	"github.com/stromdb/strom/internal/row"
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
		if _, err := h.tab.Put(kvs[i%len(kvs)], nil, 1); err != nil {
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
	h := newHarness(b, usersTable(nil))
	b.ReportAllocs()
	b.ResetTimer()
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
		if _, err := h.tab.Put(kv, nil, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
}
