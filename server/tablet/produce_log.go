package tablet

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// handleProduceLog appends client batches to bucket logs. Every batch of a bucket is checked
// (length, magic, CRC) before any of it is stored; a bucket's batches are appended as one
// unit. The response has exactly one entry per requested bucket, echoing its ids, because
// the Rust writer panics on entries it did not ask for.
func (s *Server) handleProduceLog(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ProduceLogRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if a := r.GetAcks(); a != 0 && a != 1 && a != -1 {
		return nil, ferr.New(ferr.InvalidRequiredAcks, "Invalid required acks %d: must be 0, 1 or -1.", a)
	}
	resp := &flusspb.ProduceLogResponse{BucketsResp: make([]*flusspb.PbProduceLogRespForBucket, 0, len(r.BucketsReq))}
	now := s.opts.Now().UnixMilli()
	// Appends happen here, in the connection's request order; waiting for them to become
	// durable happens off the request loop, so pipelined requests share fsyncs.
	var waits []func() error
	var waiting []*flusspb.PbProduceLogRespForBucket
	for _, br := range r.BucketsReq {
		out := &flusspb.PbProduceLogRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		base, durable, err := s.appendBucket(bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId()), br.Records, now)
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.BaseOffset = proto.Int64(base)
			waits = append(waits, durable)
			waiting = append(waiting, out)
		}
		resp.BucketsResp = append(resp.BucketsResp, out)
	}
	if len(waits) == 0 {
		return resp, nil
	}
	return req.Defer(func() (proto.Message, error) {
		for i, wait := range waits {
			if err := wait(); err != nil {
				waiting[i].BaseOffset = nil
				setBucketError(&waiting[i].ErrorCode, &waiting[i].ErrorMessage, err)
			}
		}
		return resp, nil
	})
}

// appendBucket validates and writes one bucket's batches; durable reports when they are
// durable per the log's flush policy.
func (s *Server) appendBucket(b cluster.Bucket, records []byte, nowMs int64) (int64, func() error, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, nil, err
	}
	if rep.Table.HasPrimaryKey() {
		return 0, nil, ferr.New(ferr.UnknownServerError, "Table %s is a primary key table: write to it with PUT_KV, not PRODUCE_LOG.", rep.Table.Path)
	}
	// Split the payload into whole batches; the log checks each batch's CRC before it
	// writes anything, so the payload is only walked here, not checksummed twice.
	var batches []record.Batch
	r := record.NewBatchReader(records)
	for b, ok := r.Next(); ok; b, ok = r.Next() {
		batches = append(batches, b)
	}
	if err := r.Err(); err != nil {
		return 0, nil, err
	}
	if rest := r.Rest(); len(rest) > 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes of an incomplete batch after batch %d", record.ErrTrailingBytes, len(rest), len(batches))
	}
	res, durable, err := rep.Log.AppendStaged(batches, nowMs)
	if err != nil {
		return 0, nil, err
	}
	return res.FirstOffset, durable, nil
}
