package logstore

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/journal"
)

// BenchmarkJournalAppend: W writers, each appending to its own bucket log with one append
// in flight, every append acknowledged once durable; with the journal (one fdatasync per
// group across all buckets) and without (each bucket's own fdatasync). Run it on the disk
// under test (TMPDIR); compare the two sub-benchmarks pair by pair (docs/benchmarks.md).
func BenchmarkJournalAppend(b *testing.B) {
	for _, size := range []int{4 << 10, 128 << 10} {
		for _, writers := range []int{4, 16, 64} {
			for _, mode := range []string{"segment", "journal"} {
				b.Run(fmt.Sprintf("record=%dKiB/writers=%d/%s", size>>10, writers, mode), func(b *testing.B) {
					benchJournalAppend(b, size, writers, mode == "journal")
				})
			}
		}
	}
}

func benchJournalAppend(b *testing.B, size, writers int, useJournal bool) {
	root := b.TempDir()
	var j *journal.Journal
	if useJournal {
		var err error
		if j, err = journal.Open(root, journal.Options{Logger: discardLogger()}); err != nil {
			b.Fatal(err)
		}
		defer j.Close()
	}
	logs := make([]*Log, writers)
	for w := range logs {
		// Every size goes through the journal when it is on: the benchmark measures the
		// journal itself, the routing threshold is the server's decision.
		logs[w] = open(b, filepath.Join(root, fmt.Sprintf("bucket-%d", w)), Options{Journal: j, JournalMaxBytes: 1 << 30, JournalMinInFlight: 1})
		defer logs[w].Close()
	}
	proto := plain(1, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + writers - 1) / writers
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(l *Log) {
			defer wg.Done()
			buf := append(record.Batch(nil), proto...)
			for i := 0; i < per; i++ {
				if _, err := l.Append([]record.Batch{buf}, int64(i)); err != nil {
					b.Error(err)
					return
				}
			}
		}(logs[w])
	}
	wg.Wait()
	b.ReportMetric(float64(per*writers)/time.Since(start).Seconds(), "appends/s")
}
