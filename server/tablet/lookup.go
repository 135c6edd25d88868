package tablet

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// LOOKUP (1017), versions 0 and 1 (upstream ApiKeys.java): v1 clients encode the keys of a kv
// format version 2 lake table whose bucket key differs from the primary key in the compacted
// encoding, v0 clients with the lake's encoder, which such a table refuses
// (checkKeyEncodingVersion). Otherwise the versions are served alike.
func init() { kvAPIs.register(wire.Lookup, 0, 1, (*kvService).handleLookup) }

// handleLookup answers point lookups on committed state (docs/primary-keys.md §3): per bucket
// exactly one PbValue per key, in request order, with the value absent for a missing key.
func (s *kvService) handleLookup(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.LookupRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if r.GetInsertIfNotExists() {
		// Inserting waits for the changelog's fsync: off the connection's loop.
		return req.Defer(func() (proto.Message, error) { return s.lookupOrInsert(&r, req.Header.APIVersion), nil })
	}
	buckets := make([]cluster.Bucket, len(r.BucketsReq))
	for i, br := range r.BucketsReq {
		buckets[i] = bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId())
	}
	return s.readAfterBarrier(ctx, req, buckets, func(reps []*Replica, errs []error) proto.Message {
		return s.lookup(&r, req.Header.APIVersion, reps, errs)
	})
}

// lookup answers a LOOKUP without insert_if_not_exists, given the replica (or the error) of
// each of its buckets in order.
func (s *kvService) lookup(r *flusspb.LookupRequest, version int16, reps []*Replica, errs []error) *flusspb.LookupResponse {
	resp := &flusspb.LookupResponse{BucketsResp: make([]*flusspb.PbLookupRespForBucket, 0, len(r.BucketsReq))}
	var vals [][]byte
	for i, br := range r.BucketsReq {
		out := &flusspb.PbLookupRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId,
			OriginalPartitionName: br.OriginalPartitionName}
		resp.BucketsResp = append(resp.BucketsResp, out)
		rep, err := reps[i], errs[i]
		if err == nil {
			err = s.readable(rep)
		}
		if err == nil {
			err = keyEncodingVersionError(rep.Table, version)
		}
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
	return resp
}

// lookupOrInsert answers a LOOKUP with insert_if_not_exists (Java ReplicaManager.lookups): per
// bucket, keys without a row get one holding just the key columns (kvstore.InsertMissingStaged),
// and once that is durable every key is looked up, so the answer has a value for each key. A
// bucket whose insert fails answers with that error.
func (s *kvService) lookupOrInsert(r *flusspb.LookupRequest, version int16) *flusspb.LookupResponse {
	resp := &flusspb.LookupResponse{BucketsResp: make([]*flusspb.PbLookupRespForBucket, 0, len(r.BucketsReq))}
	now := s.opts.Now().UnixMilli()
	for _, br := range r.BucketsReq {
		out := &flusspb.PbLookupRespForBucket{BucketId: proto.Int32(br.GetBucketId()), PartitionId: br.PartitionId,
			OriginalPartitionName: br.OriginalPartitionName}
		resp.BucketsResp = append(resp.BucketsResp, out)
		b := bucketOf(r.GetTableId(), br.PartitionId, br.GetBucketId())
		var vals [][]byte
		err := s.checkKeyEncodingVersion(b, version)
		if err == nil {
			vals, err = s.insertAndLookup(b, br.Keys, now)
		}
		if err != nil {
			setBucketError(&out.ErrorCode, &out.ErrorMessage, err)
			continue
		}
		out.Values = make([]*flusspb.PbValue, len(vals))
		for i, v := range vals {
			out.Values[i] = &flusspb.PbValue{Values: v}
		}
	}
	return resp
}

func (s *kvService) insertAndLookup(b cluster.Bucket, keys [][]byte, nowMs int64) ([][]byte, error) {
	rep, err := s.kvReplica(b)
	if err != nil {
		return nil, err
	}
	p, err := rep.KV.InsertMissingStaged(keys, nowMs)
	if err != nil {
		return nil, err
	}
	if err := p.Wait(context.Background()); err != nil {
		return nil, err
	}
	return rep.KV.Lookup(keys, nil)
}
