package tablet

import (
	"context"

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
	for _, br := range r.BucketsReq {
		out := &flusspb.PbProduceLogRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		base, err := s.appendBucket(bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId()), br.Records, now)
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.BaseOffset = proto.Int64(base)
		}
		resp.BucketsResp = append(resp.BucketsResp, out)
	}
	return resp, nil
}

func (s *Server) appendBucket(b cluster.Bucket, records []byte, nowMs int64) (int64, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, err
	}
	if rep.Table.HasPrimaryKey() {
		return 0, ferr.New(ferr.UnknownServerError, "Table %s is a primary key table: write to it with PUT_KV, not PRODUCE_LOG.", rep.Table.Path)
	}
	n, err := record.ValidateAll(records)
	if err != nil {
		return 0, err
	}
	batches := make([]record.Batch, 0, n)
	for b, err := range record.Iterate(records) {
		if err != nil {
			return 0, err
		}
		batches = append(batches, b)
	}
	res, err := rep.Log.Append(batches, nowMs)
	if err != nil {
		return 0, err
	}
	return res.FirstOffset, nil
}

func bucketOf(tableID int64, partitionID *int64, bucket int32) cluster.Bucket {
	b := cluster.Bucket{TableID: tableID, PartitionID: cluster.NoPartition, Bucket: bucket}
	if partitionID != nil {
		b.PartitionID = *partitionID
	}
	return b
}

// setBucketError fills a per-bucket error_code/error_message pair from err.
func setBucketError(code **int32, msg **string, err error) {
	*code = proto.Int32(int32(ferr.CodeOf(err)))
	if m := ferr.MessageOf(err); m != "" {
		*msg = proto.String(m)
	}
}
