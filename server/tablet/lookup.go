package tablet

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// handleLookup answers point lookups on committed state (semantics.md §4.6): per bucket
// exactly one PbValue per key, in request order, with the value absent for a missing key.
func (s *Server) handleLookup(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.LookupRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	resp := &flusspb.LookupResponse{BucketsResp: make([]*flusspb.PbLookupRespForBucket, 0, len(r.BucketsReq))}
	var vals [][]byte
	for _, br := range r.BucketsReq {
		out := &flusspb.PbLookupRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId,
			OriginalPartitionName: br.OriginalPartitionName}
		resp.BucketsResp = append(resp.BucketsResp, out)
		if r.GetInsertIfNotExists() {
			setBucketError(&out.ErrorCode, &out.ErrorMessage,
				ferr.New(ferr.UnknownServerError, "lookup with insert_if_not_exists is not supported by this server"))
			continue
		}
		rep, err := s.kvReplica(bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId()))
		if err == nil {
			vals, err = rep.KV.Lookup(br.Keys, vals)
		}
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
			continue
		}
		pv := make([]flusspb.PbValue, len(vals))
		out.Values = make([]*flusspb.PbValue, len(vals))
		for i, v := range vals {
			pv[i].Values = v // nil leaves the field absent
			out.Values[i] = &pv[i]
		}
	}
	return resp, nil
}
