package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// partitionedTable returns the table at path, or the errors Fluss gives for a missing or
// non-partitioned table.
func (c *Coordinator) partitionedTable(path cluster.TablePath) (*cluster.TableInfo, error) {
	t, ok := c.TableByPath(path)
	if !ok {
		return nil, ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	if !t.Partitioned() {
		return nil, ferr.New(ferr.TableNotPartitionedException, "Table %s is not partitioned.", path)
	}
	return t, nil
}

// CreatePartition registers a partition of a partitioned table and opens its buckets.
func (c *Coordinator) CreatePartition(ctx context.Context, path cluster.TablePath, spec map[string]string, ignoreIfExists bool) error {
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	t, err := c.partitionedTable(path)
	if err != nil {
		return err
	}
	values, err := metadata.ResolvePartitionSpec(path.String(), t.Descriptor.PartitionKeys, spec, true)
	if err != nil {
		return err
	}
	if err := t.Descriptor.AutoPartition().CheckPartitionTime(t.Descriptor.PartitionKeys, values, c.opts.Now()); err != nil {
		return err
	}
	_, err = c.createPartitionLocked(ctx, t, values, ignoreIfExists)
	return err
}

// createPartitionLocked does the work of CreatePartition; the caller holds ddlMu.
func (c *Coordinator) createPartitionLocked(ctx context.Context, t *cluster.TableInfo, values []string, ignoreIfExists bool) (*cluster.PartitionInfo, error) {
	name := metadata.PartitionName(values)
	if p, ok := c.PartitionByName(t.ID, name); ok {
		if ignoreIfExists {
			return p, nil
		}
		return nil, ferr.New(ferr.PartitionAlreadyExists, "Partition '%s' already exists for table %s",
			metadata.QualifiedPartitionName(t.Descriptor.PartitionKeys, values), t.Path)
	}
	if max := c.opts.MaxPartitionNum; max > 0 && c.partitionCount() >= int(max) {
		return nil, ferr.New(ferr.PartitionMaxNumException, "Exceed the maximum number of partitions in the cluster (max.partition.num = %d).", max)
	}
	id, err := c.store.NextID(ctx, "partition")
	if err != nil {
		return nil, fmt.Errorf("allocate partition id: %w", err)
	}
	rec, _ := json.Marshal(partitionRecord{ID: id, Values: values})
	ops := []meta.Op{meta.Put(partitionKey(t.ID, name), rec)}
	var states map[cluster.Bucket]cluster.BucketState
	if c.clustered() {
		var assign []meta.Op
		if assign, states, err = c.opts.Cluster.Assign(t, id); err != nil {
			return nil, err
		}
		ops = append(ops, assign...)
	}
	ok, err := c.store.Txn(ctx,
		[]meta.Cond{{Key: tableKey(t.Path), Exists: true}, {Key: partitionKey(t.ID, name)}}, ops)
	if err != nil {
		return nil, fmt.Errorf("create partition %s of %s: %w", name, t.Path, err)
	}
	if !ok {
		return nil, ferr.New(ferr.PartitionAlreadyExists, "Partition '%s' already exists for table %s", name, t.Path)
	}
	p := &cluster.PartitionInfo{TableID: t.ID, ID: id, Name: name, Values: values}
	// As for tables: buckets first, then visibility; undo the registration on failure.
	if c.replicas != nil {
		if err := c.replicas.BecomeLeader(ctx, t, p); err != nil {
			c.replicas.StopReplicas(ctx, t.ID, id)
			if _, derr := c.store.Txn(ctx, nil, []meta.Op{meta.Delete(partitionKey(t.ID, name))}); derr != nil {
				c.log.Error("cannot roll back partition registration", "table", t.Path, "partition", name, "err", derr)
			}
			return nil, fmt.Errorf("open buckets of partition %s of %s: %w", name, t.Path, err)
		}
	}
	c.mu.Lock()
	c.addPartitionLocked(p)
	c.mu.Unlock()
	if c.clustered() {
		c.opts.Cluster.Created(ctx, t, p, states)
	}
	c.log.Info("created partition", "table", t.Path, "partition", name, "id", id)
	return p, nil
}

func (c *Coordinator) partitionCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.partByID)
}

// DropPartition removes a partition and deletes its data.
func (c *Coordinator) DropPartition(ctx context.Context, path cluster.TablePath, spec map[string]string, ignoreIfNotExists bool) error {
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	t, err := c.partitionedTable(path)
	if err != nil {
		return err
	}
	values, err := metadata.ResolvePartitionSpec(path.String(), t.Descriptor.PartitionKeys, spec, false)
	if err != nil {
		return err
	}
	p, ok := c.PartitionByName(t.ID, metadata.PartitionName(values))
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return ferr.New(ferr.PartitionNotExists, "Partition '%s' does not exist for table %s",
			metadata.QualifiedPartitionName(t.Descriptor.PartitionKeys, values), t.Path)
	}
	return c.dropPartitionLocked(ctx, t, p)
}

func (c *Coordinator) dropPartitionLocked(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo) error {
	ops := []meta.Op{meta.Delete(partitionKey(t.ID, p.Name))}
	if c.clustered() {
		ops = append(ops, c.opts.Cluster.DropOps(t.ID, p.ID)...)
	}
	if _, err := c.store.Txn(ctx, nil, ops); err != nil {
		return fmt.Errorf("drop partition %s of %s: %w", p.Name, t.Path, err)
	}
	c.mu.Lock()
	delete(c.partitions[t.ID], p.Name)
	delete(c.partByID, p.ID)
	c.mu.Unlock()
	if c.clustered() {
		c.opts.Cluster.Dropped(ctx, t.ID, p.ID)
	}
	if c.replicas != nil {
		if err := c.replicas.StopReplicas(ctx, t.ID, p.ID); err != nil {
			c.log.Warn("cannot delete data of dropped partition", "table", t.Path, "partition", p.Name, "err", err)
		}
	}
	c.log.Info("dropped partition", "table", t.Path, "partition", p.Name, "id", p.ID)
	return nil
}

func specOf(s *flusspb.PbPartitionSpec) map[string]string {
	m := make(map[string]string, len(s.GetPartitionKeyValues()))
	for _, kv := range s.GetPartitionKeyValues() {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

func init() { registerAdmin(wire.CreatePartition, 0, 0, (*Coordinator).handleCreatePartition) }

func (c *Coordinator) handleCreatePartition(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreatePartitionRequest
	path, err := c.decodeForTable(req, &r, auth.OpWrite)
	if err != nil {
		return nil, err
	}
	// Field 3 is named ignore_if_not_exists but means "ignore if the partition exists".
	return &flusspb.CreatePartitionResponse{}, c.CreatePartition(ctx, path, specOf(r.GetPartitionSpec()), r.GetIgnoreIfNotExists())
}

func init() { registerAdmin(wire.DropPartition, 0, 0, (*Coordinator).handleDropPartition) }

func (c *Coordinator) handleDropPartition(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropPartitionRequest
	path, err := c.decodeForTable(req, &r, auth.OpWrite)
	if err != nil {
		return nil, err
	}
	return &flusspb.DropPartitionResponse{}, c.DropPartition(ctx, path, specOf(r.GetPartitionSpec()), r.GetIgnoreIfNotExists())
}

func init() { registerReadOnly(wire.ListPartitionInfos, 0, 0, (*Coordinator).handleListPartitionInfos) }

func (c *Coordinator) handleListPartitionInfos(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListPartitionInfosRequest
	path, err := c.decodeForTable(req, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	t, err := c.partitionedTable(path)
	if err != nil {
		return nil, err
	}
	partial := specOf(r.GetPartialPartitionSpec())
	parts := c.Partitions(t.ID)
	slices.SortFunc(parts, func(a, b *cluster.PartitionInfo) int { return int(a.ID - b.ID) })
	resp := &flusspb.ListPartitionInfosResponse{}
	for _, p := range parts {
		if len(partial) > 0 {
			ok, err := metadata.MatchesPartialSpec(t.Descriptor.PartitionKeys, p.Values, partial)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		spec := &flusspb.PbPartitionSpec{}
		for i, k := range t.Descriptor.PartitionKeys {
			spec.PartitionKeyValues = append(spec.PartitionKeyValues, &flusspb.PbKeyValue{Key: proto.String(k), Value: proto.String(p.Values[i])})
		}
		resp.PartitionsInfo = append(resp.PartitionsInfo, &flusspb.PbPartitionInfo{PartitionId: proto.Int64(p.ID), PartitionSpec: spec})
	}
	return resp, nil
}

// RunAutoPartition pre-creates and expires partitions of every auto-partitioned table for
// the coordinator's current time. It runs when such a table is created and then periodically;
// failures are logged, as in Fluss.
func (c *Coordinator) RunAutoPartition(ctx context.Context) {
	if c.standby() {
		return
	}
	c.mu.RLock()
	var tables []*cluster.TableInfo
	for _, t := range c.tablesByID {
		if t.Partitioned() && t.Descriptor.AutoPartition().Enabled {
			tables = append(tables, t)
		}
	}
	c.mu.RUnlock()
	for _, t := range tables {
		c.autoPartition(ctx, t)
	}
}

func (c *Coordinator) autoPartition(ctx context.Context, t *cluster.TableInfo) {
	ap := t.Descriptor.AutoPartition()
	if !ap.Enabled {
		return
	}
	c.ddlMu.Lock()
	defer c.ddlMu.Unlock()
	if cur, ok := c.TableByID(t.ID); !ok || cur != t {
		return // dropped or replaced meanwhile
	}
	now := c.opts.Now()
	// Pre-create the current unit and the following ones (only single-key tables; tables
	// with several partition keys have num-precreate 0).
	if len(t.Descriptor.PartitionKeys) == 1 {
		for i := 0; i < ap.NumPrecreate; i++ {
			v, err := metadata.AutoPartitionTime(now, i, ap.TimeUnit, ap.Format(), ap.Location)
			if err != nil {
				c.log.Warn("auto-partition: cannot format partition time", "table", t.Path, "err", err)
				return
			}
			if _, err := c.createPartitionLocked(ctx, t, []string{v}, true); err != nil {
				c.log.Warn("auto-partition: cannot create partition", "table", t.Path, "partition", v, "err", err)
				return
			}
		}
	}
	if ap.NumRetention < 0 {
		return
	}
	oldest, err := metadata.AutoPartitionTime(now, -ap.NumRetention, ap.TimeUnit, ap.Format(), ap.Location)
	if err != nil {
		return
	}
	keyIdx := slices.Index(t.Descriptor.PartitionKeys, ap.EffectiveKey(&t.Descriptor))
	if keyIdx < 0 {
		return
	}
	for _, p := range c.Partitions(t.ID) {
		// Partition time values of one format sort as strings in time order.
		if keyIdx < len(p.Values) && p.Values[keyIdx] < oldest {
			if err := c.dropPartitionLocked(ctx, t, p); err != nil {
				c.log.Warn("auto-partition: cannot drop expired partition", "table", t.Path, "partition", p.Name, "err", err)
			}
		}
	}
}

// runAutoPartitionLoop calls RunAutoPartition every interval until ctx ends.
func (c *Coordinator) runAutoPartitionLoop(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 10 * time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.RunAutoPartition(ctx)
		}
	}
}
