package coordinator

import (
	"context"
	"encoding/json"
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

func init() {
	partitionAPIs.admin(wire.CreatePartition, 0, 0, (*partitionService).handleCreatePartition)
}

func (s *partitionService) handleCreatePartition(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreatePartitionRequest
	path, err := s.access.decodeForTable(req, &r, auth.OpWrite)
	if err != nil {
		return nil, err
	}
	// Field 3 is named ignore_if_not_exists but means "ignore if the partition exists".
	return &flusspb.CreatePartitionResponse{}, s.CreatePartition(ctx, path, specOf(r.GetPartitionSpec()), r.GetIgnoreIfNotExists())
}

// CreatePartition registers a partition of a partitioned table and opens its buckets.
func (s *partitionService) CreatePartition(ctx context.Context, path cluster.TablePath, spec map[string]string, ignoreIfExists bool) error {
	defer s.catalog.lockDDL()()
	t, err := s.partitionedTable(path)
	if err != nil {
		return err
	}
	values, err := metadata.ResolvePartitionSpec(path.String(), t.Descriptor.PartitionKeys, spec, true)
	if err != nil {
		return err
	}
	if err := t.Descriptor.Properties.AutoPartition().CheckPartitionTime(t.Descriptor.PartitionKeys, values, s.now()); err != nil {
		return err
	}
	_, err = s.createPartitionLocked(ctx, t, values, ignoreIfExists)
	return err
}

// createPartitionLocked does the work of CreatePartition; the caller holds ddlMu.
func (s *partitionService) createPartitionLocked(ctx context.Context, t *cluster.TableInfo, values []string, ignoreIfExists bool) (*cluster.PartitionInfo, error) {
	name := metadata.PartitionName(values)
	if p, ok := s.catalog.PartitionByName(t.ID, name); ok {
		if ignoreIfExists {
			return p, nil
		}
		return nil, ferr.New(ferr.PartitionAlreadyExists, "Partition '%s' already exists for table %s",
			metadata.QualifiedPartitionName(t.Descriptor.PartitionKeys, values), t.Path)
	}
	if err := s.checkLimits(t, name); err != nil {
		return nil, err
	}
	id, err := s.store.NextID(ctx, "partition")
	if err != nil {
		return nil, fmt.Errorf("allocate partition id: %w", err)
	}
	rec, _ := json.Marshal(partitionRecord{ID: id, Values: values})
	ops := []meta.Op{meta.Put(partitionKey(t.ID, name), rec)}
	var states map[cluster.Bucket]cluster.BucketState
	if s.place != nil {
		var assign []meta.Op
		if assign, states, err = s.place.Assign(t, id); err != nil {
			return nil, err
		}
		ops = append(ops, assign...)
	}
	ok, err := s.store.Txn(ctx,
		[]meta.Cond{{Key: tableKey(t.Path), Exists: true}, {Key: partitionKey(t.ID, name)}}, ops)
	if err != nil {
		return nil, fmt.Errorf("create partition %s of %s: %w", name, t.Path, err)
	}
	if !ok {
		return nil, ferr.New(ferr.PartitionAlreadyExists, "Partition '%s' already exists for table %s", name, t.Path)
	}
	p := &cluster.PartitionInfo{TableID: t.ID, ID: id, Name: name, Values: values}
	// As for tables: buckets first, then visibility; undo the registration on failure.
	if s.replicas != nil {
		if err := s.replicas.BecomeLeader(ctx, t, p); err != nil {
			s.replicas.StopReplicas(ctx, t.ID, id)
			if _, derr := s.store.Txn(ctx, nil, []meta.Op{meta.Delete(partitionKey(t.ID, name))}); derr != nil {
				s.log.Error("cannot roll back partition registration", "table", t.Path, "partition", name, "err", derr)
			}
			return nil, fmt.Errorf("open buckets of partition %s of %s: %w", name, t.Path, err)
		}
	}
	s.cache.addPartition(p)
	if s.place != nil {
		s.place.Created(ctx, t, p, states)
	}
	s.log.Info("created partition", "table", t.Path, "partition", name, "id", id)
	return p, nil
}

// checkLimits refuses a new partition of t as Fluss's MetadataManager.createPartition does:
// max.partition.num counts the partitions of the table, and max.bucket.num the buckets of all
// of them with the new one (Fluss 0.9.1; 1.0 checks only the new partition's buckets, which
// CREATE_TABLE has already checked against the same limit).
func (s *partitionService) checkLimits(t *cluster.TableInfo, name string) error {
	existing := len(s.catalog.Partitions(t.ID))
	if max := s.maxPartitionNum; max > 0 && existing+1 > int(max) {
		return ferr.New(ferr.PartitionMaxNumException, "Exceed the maximum number of partitions for table %s, only allow %d partitions.", t.Path, max)
	}
	maxBuckets := s.maxBucketNum
	if maxBuckets <= 0 {
		maxBuckets = metadata.DefaultMaxBucketNum
	}
	if total := int64(t.NumBuckets()) * int64(existing+1); total > int64(maxBuckets) {
		return ferr.New(ferr.BucketMaxNumException, "Adding partition '%s' would result in %d total buckets for table %s, exceeding the maximum of %d buckets.",
			name, total, t.Path, maxBuckets)
	}
	return nil
}
