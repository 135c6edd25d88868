package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() {
	kvSnapshotAPIs.admin(wire.DropKvSnapshotLease, 0, 0, (*kvSnapshotService).handleDropKvSnapshotLease)
}

// handleDropKvSnapshotLease removes a lease; an unknown lease is not an error.
func (s *kvSnapshotService) handleDropKvSnapshotLease(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropKvSnapshotLeaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	snaps := s.store()
	if snaps == nil {
		return nil, errNoSnapshotStore()
	}
	if s.access.checks(req) {
		// READ on every table the lease holds, as Fluss checks.
		for _, id := range snaps.LeaseTables(r.GetLeaseId()) {
			if err := s.access.authorizeTableID(req, s.catalog, auth.OpRead, id); err != nil {
				return nil, err
			}
		}
	}
	if err := snaps.Drop(ctx, r.GetLeaseId()); err != nil {
		return nil, leaseError(err, "drop", r.GetLeaseId())
	}
	return &flusspb.DropKvSnapshotLeaseResponse{}, nil
}
