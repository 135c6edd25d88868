package fluss

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ToArrow reads every subscribed bucket from its current position up to the end of its log
// as of the call (its high watermark) and returns those rows as one arrow.Table with the
// scanner's Schema. Rows appended later are not waited for. Afterwards each bucket's position
// is the end that was read to, so a following Poll continues from there. The caller releases
// the table.
func (s *RecordBatchLogScanner) ToArrow(ctx context.Context) (arrow.Table, error) {
	f := s.f
	f.mu.Lock()
	subs := make(map[TableBucket]int64, len(f.subs))
	for tb, o := range f.subs {
		subs[tb] = o
	}
	f.mu.Unlock()
	ends := make(map[TableBucket]int64, len(subs))
	for tb, pos := range subs {
		end, err := f.latest(ctx, tb)
		if err != nil {
			return nil, publicError(fmt.Errorf("fluss: end offset of %s: %w", tb, err))
		}
		ends[tb] = end
		if pos == EarliestOffset {
			// Resolve it, so that "reached the end" is a comparison of offsets even when
			// retention emptied the log.
			start, err := f.listOffset(ctx, tb, OffsetEarliest())
			if err != nil {
				return nil, publicError(fmt.Errorf("fluss: start offset of %s: %w", tb, err))
			}
			f.mu.Lock()
			if f.subs[tb] == EarliestOffset {
				f.subs[tb] = start
			}
			f.mu.Unlock()
		}
	}
	var recs []arrow.RecordBatch
	release := func() {
		for _, r := range recs {
			r.Release()
		}
	}
	pending := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for tb, end := range ends {
			pos, ok := f.subs[tb]
			if !ok {
				delete(ends, tb) // unsubscribed meanwhile
				continue
			}
			if pos < end {
				return true
			}
		}
		return false
	}
	for pending() {
		out, err := f.poll(ctx, f.conn.cfg.ScannerFetchMaxWait)
		if err != nil {
			release()
			return nil, publicError(err)
		}
		for _, fe := range out {
			end, want := ends[fe.tb]
			for _, b := range fe.batches {
				if !want || b.BaseOffset >= end {
					b.Record.Release()
					continue
				}
				rec := b.Record
				if b.LastOffset >= end { // the batch straddles the end: keep rows before it
					rec = b.Record.NewSlice(0, end-b.BaseOffset)
					b.Record.Release()
				}
				recs = append(recs, rec)
			}
		}
		if err := ctx.Err(); err != nil {
			release()
			return nil, err
		}
	}
	// Rewind buckets that were fetched past their end while others caught up.
	f.mu.Lock()
	for tb, end := range ends {
		if pos, ok := f.subs[tb]; ok && pos > end {
			f.subs[tb] = end
		}
	}
	f.mu.Unlock()
	tbl := array.NewTableFromRecords(f.outArrow, recs)
	release()
	return tbl, nil
}

// ToArrow reads the whole log of a log table — every bucket of every partition, from the
// earliest offset still stored to the end as of the call — into one arrow.Table with the
// scan's projection. It is meant for tables that fit in memory; stream larger ones with
// CreateRecordBatchLogScanner. The caller releases the table. Primary-key tables are
// refused: their current rows come from lookups or CreateBucketBatchScanner, their changes
// from a LogScanner.
func (s *TableScan) ToArrow(ctx context.Context) (arrow.Table, error) {
	t := s.t
	if t.HasPrimaryKey() {
		return nil, fmt.Errorf("fluss: ToArrow reads log tables; %s has a primary key", t.info.Path)
	}
	sc, err := s.CreateRecordBatchLogScanner()
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	partitions := []int64{NoPartition}
	if t.info.IsPartitioned() {
		infos, err := t.conn.Admin().ListPartitionInfos(ctx, t.info.Path, nil)
		if err != nil {
			return nil, err
		}
		partitions = partitions[:0]
		for _, p := range infos {
			partitions = append(partitions, p.ID)
		}
	}
	for _, p := range partitions {
		for b := range t.info.NumBuckets() {
			if err := sc.f.subscribe(ctx, TableBucket{t.info.TableID, p, b}, EarliestOffset); err != nil {
				return nil, err
			}
		}
	}
	return sc.ToArrow(ctx)
}
