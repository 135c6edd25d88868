package tablet

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// LIST_OFFSETS offset types.
const (
	offsetTypeEarliest  = 0
	offsetTypeLatest    = 1
	offsetTypeTimestamp = 2
	offsetTypeLeaderEnd = 3
)

// bucketInfoService answers what clients ask of a bucket's log as a whole: its offsets
// (LIST_OFFSETS, and ListLogOffset for the Kafka listener) and row counts
// (GET_TABLE_STATS). It owns no state.
type bucketInfoService struct {
	opts bucketInfoOptions
	tieredLog

	replicaLookup
}

// bucketInfoOptions are the parts of Options bucketInfoService reads.
type bucketInfoOptions struct {
	Now func() time.Time
}

var bucketInfoAPIs apiTable[*bucketInfoService]

// LIST_OFFSETS (1021): version 0 only.
func init() { bucketInfoAPIs.register(wire.ListOffsets, 0, 0, (*bucketInfoService).handleListOffsets) }

func (s *bucketInfoService) handleListOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	resp := &flusspb.ListOffsetsResponse{}
	now := s.opts.Now().UnixMilli()
	for _, id := range r.BucketId {
		out := &flusspb.PbListOffsetsRespForBucket{BucketId: proto.Int32(id)}
		off, err := s.listOffset(bucketOf(r.GetTableId(), r.PartitionId, id), r.GetOffsetType(), r.StartTimestamp, now)
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.Offset = proto.Int64(off)
		}
		resp.BucketsResp = append(resp.BucketsResp, out)
	}
	return resp, nil
}

func (s *bucketInfoService) listOffset(b cluster.Bucket, typ int32, ts *int64, nowMs int64) (int64, error) {
	rep, err := s.replica(b)
	if err != nil {
		return 0, err
	}
	if err := rep.Log.Offline(); err != nil {
		return 0, err // a corrupt log's offsets are not to be trusted
	}
	switch typ {
	case offsetTypeEarliest:
		return s.logStart(rep), nil // the remote log start when part of the log is tiered
	case offsetTypeLatest:
		return rep.Log.HighWatermark(), nil
	case offsetTypeLeaderEnd:
		return rep.Log.LogEndOffset(), nil
	case offsetTypeTimestamp:
		if ts == nil {
			return 0, ferr.New(ferr.InvalidTimestampException, "A timestamp is required to list offsets by timestamp.")
		}
		if *ts > nowMs {
			return 0, ferr.New(ferr.InvalidTimestampException, "Get offset by timestamp %d is in the future (current time %d).", *ts, nowMs)
		}
		off, err := rep.Log.OffsetForTimestamp(*ts, nowMs)
		if err != nil && ferr.CodeOf(err) != ferr.InvalidTimestampException {
			return 0, err
		}
		if err != nil {
			off = rep.Log.LogStartOffset() // nothing local reaches ts: the remote log may
		}
		if r := s.remoteOffsetForTimestamp(rep, off, *ts); r < off || err == nil {
			return r, nil
		}
		return 0, err
	default:
		// Java's Replica.getOffset throws IllegalArgumentException here, which its
		// ApiError.fromThrowable answers as UNKNOWN_SERVER_ERROR with this message.
		return 0, ferr.New(ferr.UnknownServerError, "Invalid list offset type: %d (want 0 earliest, 1 latest, 2 timestamp or 3 leader end offset).", typ)
	}
}
