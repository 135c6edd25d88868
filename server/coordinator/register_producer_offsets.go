package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func init() {
	producerOffsetAPIs.admin(wire.RegisterProducerOffsets, 0, 0, (*producerOffsets).handleRegisterProducerOffsets)
}

func (s *producerOffsets) handleRegisterProducerOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.RegisterProducerOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	for _, to := range r.GetTableOffsets() {
		if err := s.access.authorizeTableID(req, s.tables, auth.OpWrite, to.GetTableId()); err != nil {
			return nil, err
		}
	}
	if err := validateProducerID(r.GetProducerId()); err != nil {
		return nil, err
	}
	ttl := s.ttl
	if ttl <= 0 {
		ttl = DefaultProducerOffsetsTTL
	}
	if r.TtlMs != nil {
		ttl = time.Duration(r.GetTtlMs()) * time.Millisecond
	}
	rec := producerRecord{ExpirationMs: s.now().UnixMilli() + ttl.Milliseconds()}
	for _, to := range r.GetTableOffsets() {
		for _, bo := range to.GetBucketOffsets() {
			pid := cluster.NoPartition
			if bo.PartitionId != nil {
				pid = bo.GetPartitionId()
			}
			rec.Offsets = append(rec.Offsets, producerBucketRec{TableID: to.GetTableId(), PartitionID: pid, Bucket: bo.GetBucketId(), Offset: bo.GetLogEndOffset()})
		}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, live, err := s.readProducer(ctx, r.GetProducerId()); err != nil {
		return nil, err
	} else if live {
		return &flusspb.RegisterProducerOffsetsResponse{Result: proto.Int32(producerOffsetsAlreadyExists)}, nil
	}
	if _, err := s.store.Txn(ctx, nil, []meta.Op{meta.Put(producerKey(r.GetProducerId()), data)}); err != nil {
		return nil, fmt.Errorf("register producer offsets %s: %w", r.GetProducerId(), err)
	}
	return &flusspb.RegisterProducerOffsetsResponse{Result: proto.Int32(producerOffsetsCreated)}, nil
}
