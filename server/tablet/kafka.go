package tablet

import (
	"context"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// The data path of other protocols (the Kafka listener, server/kafka): the same appends,
// reads and offsets that PRODUCE_LOG, FETCH_LOG and LIST_OFFSETS use, so there is one write
// path and one set of checks.

// AppendLog validates and appends Fluss log batches to a bucket the server leads, as
// PRODUCE_LOG does (acks 0, 1 or -1; -1 waits for the ISR on a replicated bucket). It returns
// the first offset and a wait that reports when the batches are durable (and committed for
// acks -1), bounded by timeout.
func (s *Server) AppendLog(ctx context.Context, b cluster.Bucket, batches []byte, acks int32, timeout time.Duration) (int64, func() error, error) {
	return s.produce.appendBucket(ctx, b, batches, s.opts.Now().UnixMilli(), acks, requestTimeout(int32(min(timeout.Milliseconds(), 1<<31-1))))
}

// LogRead is what ReadLog returns.
type LogRead struct {
	Batches        []byte // whole stored batches, up to the high watermark
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
	// Changed is closed when the log next changes (appends, HW moves).
	Changed <-chan struct{}
}

// ReadLog reads committed batches of a bucket the server leads from offset, up to maxBytes
// (the first batch whole even if larger).
func (s *Server) ReadLog(b cluster.Bucket, offset int64, maxBytes int) (LogRead, error) {
	rep, err := s.buckets.replica(b)
	if err != nil {
		return LogRead{}, err
	}
	out := LogRead{Changed: rep.Log.Changed(), LogStartOffset: rep.Log.LogStartOffset(), LogEndOffset: rep.Log.LogEndOffset()}
	res, err := rep.Log.Read(offset, maxBytes, true)
	if err != nil {
		return out, err
	}
	defer res.Release()
	out.HighWatermark = res.HighWatermark
	if out.Batches, err = res.AppendTo(nil); err != nil {
		return out, err
	}
	return out, nil
}

// Offset types of ListLogOffset, as LIST_OFFSETS's.
const (
	OffsetEarliest  = offsetTypeEarliest
	OffsetLatest    = offsetTypeLatest
	OffsetTimestamp = offsetTypeTimestamp
)

// ListLogOffset answers as LIST_OFFSETS does for one bucket.
func (s *Server) ListLogOffset(b cluster.Bucket, typ int32, ts *int64) (int64, error) {
	return s.bucketInfo.listOffset(b, typ, ts, s.opts.Now().UnixMilli())
}
