package coordinator

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/meta"
)

func init() {
	producerOffsetAPIs.admin(wire.DeleteProducerOffsets, 0, 0, (*producerOffsets).handleDeleteProducerOffsets)
}

func (s *producerOffsets) handleDeleteProducerOffsets(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DeleteProducerOffsetsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := validateProducerID(r.GetProducerId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok, err := s.readProducer(ctx, r.GetProducerId())
	if err != nil {
		return nil, err
	}
	if ok {
		for _, tid := range rec.tableIDs() {
			if err := s.access.authorizeTableID(req, s.tables, auth.OpWrite, tid); err != nil {
				return nil, err
			}
		}
	}
	if _, err := s.store.Txn(ctx, nil, []meta.Op{meta.Delete(producerKey(r.GetProducerId()))}); err != nil {
		return nil, fmt.Errorf("delete producer offsets %s: %w", r.GetProducerId(), err)
	}
	return &flusspb.DeleteProducerOffsetsResponse{}, nil
}
