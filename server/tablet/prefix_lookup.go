package tablet

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// PREFIX_LOOKUP (1034), versions 0 and 1: as LOOKUP, v0 clients encode prefixes with the
// lake's encoder and are refused where the table encodes keys otherwise
// (checkKeyEncodingVersion).
func init() { kvAPIs.register(wire.PrefixLookup, 0, 1, (*kvService).handlePrefixLookup) }

// handlePrefixLookup answers prefix lookups on committed state (docs/primary-keys.md §4): per
// bucket one PbValueList per prefix key, in request order, each holding the values of every
// stored key that starts with the prefix, in key order.
func (s *kvService) handlePrefixLookup(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.PrefixLookupRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	buckets := make([]cluster.Bucket, len(r.BucketsReq))
	for i, br := range r.BucketsReq {
		buckets[i] = bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId())
	}
	return s.readAfterBarrier(ctx, req, buckets, func(reps []*Replica, errs []error) proto.Message {
		return s.prefixLookup(&r, req.Header.APIVersion, reps, errs)
	})
}

// prefixLookup answers a PREFIX_LOOKUP, given the replica (or the error) of each of its
// buckets in order.
func (s *kvService) prefixLookup(r *flusspb.PrefixLookupRequest, version int16, reps []*Replica, errs []error) *flusspb.PrefixLookupResponse {
	resp := &flusspb.PrefixLookupResponse{BucketsResp: make([]*flusspb.PbPrefixLookupRespForBucket, 0, len(r.BucketsReq))}
	for i, br := range r.BucketsReq {
		out := &flusspb.PbPrefixLookupRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId}
		resp.BucketsResp = append(resp.BucketsResp, out)
		rep, err := reps[i], errs[i]
		if err == nil {
			err = s.readable(rep)
		}
		if err == nil {
			err = keyEncodingVersionError(rep.Table, version)
		}
		if err == nil {
			err = checkPrefixes(br.Keys)
		}
		var lists [][][]byte
		if err == nil {
			lists, err = rep.KV.PrefixLookup(br.Keys)
		}
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
			continue
		}
		out.ValueLists = make([]*flusspb.PbValueList, len(lists))
		for i, l := range lists {
			out.ValueLists[i] = &flusspb.PbValueList{Values: l}
		}
	}
	return resp
}

// checkPrefixes refuses an empty prefix key. A prefix key is the encoded bucket key of the
// rows wanted, never empty for any schema; an empty one would match (and copy into one
// response) the whole bucket. Java's client never sends one; its server maps the
// IllegalArgumentException of a malformed request to UNKNOWN_SERVER_ERROR, as done here.
func checkPrefixes(keys [][]byte) error {
	for i, k := range keys {
		if len(k) == 0 {
			return ferr.New(ferr.UnknownServerError, "Prefix lookup key %d is empty: a prefix key must be the encoded bucket key of the rows to look up.", i)
		}
	}
	return nil
}
