package kvstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/stromdb/strom/internal/options"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/server/logstore"
)

// BenchmarkSteadyState measures the primary-key path at steady state, the shape of `strom
// bench` on one bucket: wideTable loaded with STROM_BENCH_KEYS keys (default 1M) in 1,000-row
// batches, then, as sub-benchmarks on that table, 1,000-row batches of new keys ("new"),
// 1,000-row batches of updates of existing keys in a pass over the table ("update") and
// single-key lookups of random existing keys ("lookup"). cpu-µs/row (per key for lookups)
// counts every goroutine of the process, compactions included, which is what the server pays.
// STROM_BENCH_PEBBLE changes Pebble options to compare them, comma-separated:
// l0=N (L0CompactionThreshold), stop=N (L0StopWritesThreshold), block=BYTES (BlockSize of
// every level), compactions=N (MaxConcurrentCompactions), lbase=BYTES (LBaseMaxBytes),
// coalesce=0 (sstables written through Pebble's own file system, one write(2) per block),
// mem=BYTES (Options.MemTableBytes), memstop=N (MemTableStopWritesThreshold), mult=N
// (LevelMultiplier), target=BYTES (TargetFileSize of L0, doubled per level below),
// bloom=BITS (bits per key of every level's filter; 0 drops the filters), readcomp=0 (no
// read-triggered compactions).
// Run each setting in its own process, interleaved: go test ./server/kvstore -run '^$'
// -bench SteadyState -benchtime 200x.
func BenchmarkSteadyState(b *testing.B) {
	keys := int64(1_000_000)
	if v, err := strconv.ParseInt(os.Getenv("STROM_BENCH_KEYS"), 10, 64); err == nil && v > 0 {
		keys = v
	}
	tune, memBytes, err := parsePebbleTuning(os.Getenv("STROM_BENCH_PEBBLE"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	lg, err := logstore.Open(context.Background(), filepath.Join(dir, "log"), logstore.Options{Logger: discard(), FlushPolicy: logstore.FlushInterval(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	st, err := Open(filepath.Join(dir, "kv"), Options{Logger: discard(), RowCacheBytes: benchRowCacheBytes(), MemTableBytes: memBytes, tunePebble: tune})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	tab, err := st.OpenTablet(context.Background(), testBucket, wideTable(), lg)
	if err != nil {
		b.Fatal(err)
	}
	defer tab.Close()
	const batch = 1000
	ids := make([]int64, batch)
	put := func(first int64, seed int64) {
		for j := range ids {
			ids[j] = first + int64(j)
		}
		if _, err := tab.putWait(wideBatch(b, tab.tbl, ids, seed), WriteOptions{}, 1); err != nil {
			b.Fatal(err)
		}
	}
	for id := int64(0); id < keys; id += batch {
		put(id, 1)
	}
	<-tab.live.built
	next := keys
	b.Run("new", func(b *testing.B) {
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			put(next, 1)
			next += batch
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*batch), "cpu-µs/row")
	})
	upd := int64(0)
	b.Run("update", func(b *testing.B) {
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			put(upd%keys, 2)
			upd += batch
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*batch), "cpu-µs/row")
	})
	b.Run("lookup", func(b *testing.B) {
		s := uint64(7)
		key := make([][]byte, 1)
		var out [][]byte
		cpu0 := cpuTime()
		for i := 0; i < b.N*batch; i++ {
			key[0], _ = row.EncodeKey(key[0][:0], tab.tbl.keyTypes, []row.Datum{{I: int64(splitmix(&s) % uint64(keys))}})
			var err error
			if out, err = tab.Lookup(key, out); err != nil {
				b.Fatal(err)
			}
			if out[0] == nil {
				b.Fatal("a loaded key is missing")
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*batch), "cpu-µs/row")
	})
}

// parsePebbleTuning parses BenchmarkSteadyState's STROM_BENCH_PEBBLE: the options to
// change, and the memtable size (0: the default), which Open also sizes the cache by.
func parsePebbleTuning(s string) (func(*pebble.Options), int64, error) {
	var fs []func(*pebble.Options)
	var mem int64
	for _, kv := range strings.Split(s, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, 0, err
		}
		switch k {
		case "l0":
			fs = append(fs, func(o *pebble.Options) { o.L0CompactionThreshold = n })
		case "stop":
			fs = append(fs, func(o *pebble.Options) { o.L0StopWritesThreshold = n })
		case "block":
			fs = append(fs, func(o *pebble.Options) {
				for i := range o.Levels {
					o.Levels[i].BlockSize = n
				}
			})
		case "compactions":
			fs = append(fs, func(o *pebble.Options) { o.MaxConcurrentCompactions = func() int { return n } })
		case "coalesce":
			if n == 0 {
				fs = append(fs, func(o *pebble.Options) { o.FS = vfs.Default })
			}
		case "lbase":
			fs = append(fs, func(o *pebble.Options) { o.LBaseMaxBytes = int64(n) })
		case "mem":
			mem = int64(n)
		case "memstop":
			fs = append(fs, func(o *pebble.Options) { o.MemTableStopWritesThreshold = n })
		case "mult":
			fs = append(fs, func(o *pebble.Options) { o.Experimental.LevelMultiplier = n })
		case "target":
			fs = append(fs, func(o *pebble.Options) {
				for i := range o.Levels {
					o.Levels[i].TargetFileSize = int64(n) << i
				}
			})
		case "bloom":
			fs = append(fs, func(o *pebble.Options) {
				for i := range o.Levels {
					if n == 0 {
						o.Levels[i].FilterPolicy = nil
					} else {
						o.Levels[i].FilterPolicy = bloom.FilterPolicy(n)
					}
				}
			})
		case "readcomp":
			if n == 0 {
				fs = append(fs, func(o *pebble.Options) { o.Experimental.ReadSamplingMultiplier = -1 })
			}
		default:
			return nil, 0, fmt.Errorf("STROM_BENCH_PEBBLE: unknown option %q", k)
		}
	}
	return func(o *pebble.Options) {
		for _, f := range fs {
			f(o)
		}
	}, mem, nil
}

// TestMemTableDefaultIsTheOptionDefault keeps kv.rocksdb.writebuffer.size's documented default
// and the memtable size a Store opens with when none is given the same.
func TestMemTableDefaultIsTheOptionDefault(t *testing.T) {
	if got := options.KvWriteBufferSize.DefaultValue(); got != memTableBytes {
		t.Fatalf("kv.rocksdb.writebuffer.size defaults to %d bytes, kvstore to %d", got, memTableBytes)
	}
}
