package coordinator

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func init() { partitionAPIs.admin(wire.DropPartition, 0, 0, (*partitionService).handleDropPartition) }

func (s *partitionService) handleDropPartition(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropPartitionRequest
	path, err := s.access.decodeForTable(req, &r, auth.OpWrite)
	if err != nil {
		return nil, err
	}
	return &flusspb.DropPartitionResponse{}, s.DropPartition(ctx, path, specOf(r.GetPartitionSpec()), r.GetIgnoreIfNotExists())
}

// DropPartition removes a partition and deletes its data.
func (s *partitionService) DropPartition(ctx context.Context, path cluster.TablePath, spec map[string]string, ignoreIfNotExists bool) error {
	defer s.catalog.lockDDL()()
	t, err := s.partitionedTable(path)
	if err != nil {
		return err
	}
	values, err := metadata.ResolvePartitionSpec(path.String(), t.Descriptor.PartitionKeys, spec, false)
	if err != nil {
		return err
	}
	p, ok := s.catalog.PartitionByName(t.ID, metadata.PartitionName(values))
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.PartitionNotExists, "Partition '%s' does not exist for table %s",
			metadata.QualifiedPartitionName(t.Descriptor.PartitionKeys, values), t.Path)
	}
	return s.dropPartitionLocked(ctx, t, p)
}

func (s *partitionService) dropPartitionLocked(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	ops := []meta.Op{meta.Delete(partitionKey(t.ID, p.Name))}
	if s.place != nil {
		ops = append(ops, s.place.DropOps(t.ID, p.ID)...)
	}
	if _, err := s.store.Txn(ctx, nil, ops); err != nil {
		return fmt.Errorf("drop partition %s of %s: %w", p.Name, t.Path, err)
	}
	s.cache.dropPartition(p)
	if s.place != nil {
		s.place.Dropped(ctx, t.ID, p.ID)
	}
	if s.replicas != nil {
		if err := s.replicas.StopReplicas(ctx, t.ID, p.ID); err != nil {
			s.log.Warn("cannot delete data of dropped partition", "table", t.Path, "partition", p.Name, "err", err)
		}
	}
	s.log.Info("dropped partition", "table", t.Path, "partition", p.Name, "id", p.ID)
	return nil
}
