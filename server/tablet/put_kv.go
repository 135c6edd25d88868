package tablet

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/logstore"
)

// openKV opens (and recovers) the primary-key state of bucket b, whose changelog is l.
func (s *Server) openKV(ctx context.Context, b cluster.Bucket, t *cluster.TableInfo, l *logstore.Log) (*kvstore.Tablet, error) {
	schemas := func(id int16) (metadata.Schema, bool) {
		return s.opts.Catalog.Schema(t.ID, int32(id))
	}
	return s.kv.OpenTablet(ctx, b, kvstore.TableFromDescriptor(t.ID, int16(t.SchemaID), &t.Descriptor, schemas), l)
}

// handlePutKv applies KV batches to primary-key buckets (semantics.md §4.1). Buckets are
// independent; each answer echoes the bucket's ids and carries the changelog's log end offset.
// A bucket is answered only after its changelog is appended (durable per the log's flush
// policy) and its state committed, so acks 0/1/-1 all see the write in later lookups.
func (s *Server) handlePutKv(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.PutKvRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if a := r.GetAcks(); a != 0 && a != 1 && a != -1 {
		return nil, ferr.New(ferr.InvalidRequiredAcks, "Invalid required acks %d: must be 0, 1 or -1.", a)
	}
	resp := &flusspb.PutKvResponse{BucketsResp: make([]*flusspb.PbPutKvRespForBucket, 0, len(r.BucketsReq))}
	now := s.opts.Now().UnixMilli()
	for _, br := range r.BucketsReq {
		out := &flusspb.PbPutKvRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		end, err := s.putBucket(bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId()), br.Records, r.TargetColumns, now)
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
		} else {
			out.LogEndOffset = proto.Int64(end)
		}
		resp.BucketsResp = append(resp.BucketsResp, out)
	}
	return resp, nil
}

func (s *Server) putBucket(b cluster.Bucket, records []byte, targets []int32, nowMs int64) (int64, error) {
	rep, err := s.kvReplica(b)
	if err != nil {
		return 0, err
	}
	kv, err := record.ParseKvBatch(records)
	if err != nil {
		return 0, ferr.New(ferr.CorruptRecordException, "%v", err)
	}
	return rep.KV.Put(kv, targets, nowMs)
}

// kvReplica returns the bucket's replica, which must belong to a primary-key table.
func (s *Server) kvReplica(b cluster.Bucket) (*Replica, error) {
	rep, err := s.replica(b)
	if err != nil {
		return nil, err
	}
	if rep.KV == nil {
		return nil, ferr.New(ferr.NonPrimaryKeyTableException, "the table %s is not a primary key table", rep.Table.Path)
	}
	return rep, nil
}
