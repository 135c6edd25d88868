package tablet

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// INIT_WRITER (1026): version 0 only.
func init() { produceAPIs.register(wire.InitWriter, 0, 0, (*produceService).handleInitWriter) }

// handleInitWriter hands out a new cluster-unique, increasing writer id for idempotent writes.
func (s *produceService) handleInitWriter(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.InitWriterRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	id, err := s.opts.IDs.NextID(ctx, "writer")
	if err != nil {
		return nil, fmt.Errorf("allocate writer id: %w", err)
	}
	return &flusspb.InitWriterResponse{WriterId: proto.Int64(id)}, nil
}
