package lake

import (
	"context"
	"testing"
)

// BenchmarkTierLogTable measures one tiering round of 100k rows (4 columns, 2 buckets, batches
// of 1000): decode, conversion, Parquet writing and the Iceberg commit on the embedded catalog.
func BenchmarkTierLogTable(b *testing.B) {
	const batches, perBatch = 100, 1000
	ctx := context.Background()
	var rows int64
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, 2)
		for i := 0; i < batches; i++ {
			h.write(i%2, perBatch)
		}
		tr := h.tierer()
		b.StartTimer()
		if _, err := tr.TierOnce(ctx, h.buckets); err != nil {
			b.Fatal(err)
		}
		rows += batches * perBatch
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
