package fluss

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// Admin performs DDL and metadata operations. Obtain it with Connection.Admin; it is safe for
// concurrent use.
type Admin struct {
	conn *Connection
}

// CreateDatabase creates a database. desc may be nil. With ignoreIfExists an existing
// database is not an error (DATABASE_ALREADY_EXIST otherwise).
func (a *Admin) CreateDatabase(ctx context.Context, name string, desc *DatabaseDescriptor, ignoreIfExists bool) error {
	req := &flusspb.CreateDatabaseRequest{DatabaseName: proto.String(name), IgnoreIfExists: proto.Bool(ignoreIfExists)}
	if desc != nil {
		req.DatabaseJson = desc.internal().JSON()
	}
	return a.conn.callCoordinator(ctx, wire.CreateDatabase, req, &flusspb.CreateDatabaseResponse{})
}

// DropDatabase drops a database; cascade also drops its tables (DATABASE_NOT_EMPTY
// otherwise).
func (a *Admin) DropDatabase(ctx context.Context, name string, ignoreIfNotExists, cascade bool) error {
	return a.conn.callCoordinator(ctx, wire.DropDatabase, &flusspb.DropDatabaseRequest{
		DatabaseName: proto.String(name), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists), Cascade: proto.Bool(cascade),
	}, &flusspb.DropDatabaseResponse{})
}

// ListDatabases returns the names of all databases.
func (a *Admin) ListDatabases(ctx context.Context) ([]string, error) {
	var resp flusspb.ListDatabasesResponse
	if err := a.conn.callCoordinator(ctx, wire.ListDatabases, &flusspb.ListDatabasesRequest{}, &resp); err != nil {
		return nil, err
	}
	return resp.DatabaseName, nil
}

// DatabaseExists reports whether the database exists.
func (a *Admin) DatabaseExists(ctx context.Context, name string) (bool, error) {
	var resp flusspb.DatabaseExistsResponse
	if err := a.conn.callCoordinator(ctx, wire.DatabaseExists, &flusspb.DatabaseExistsRequest{DatabaseName: proto.String(name)}, &resp); err != nil {
		return false, err
	}
	return resp.GetExists(), nil
}

// GetDatabaseInfo returns a database's descriptor and times.
func (a *Admin) GetDatabaseInfo(ctx context.Context, name string) (DatabaseInfo, error) {
	var resp flusspb.GetDatabaseInfoResponse
	if err := a.conn.callCoordinator(ctx, wire.GetDatabaseInfo, &flusspb.GetDatabaseInfoRequest{DatabaseName: proto.String(name)}, &resp); err != nil {
		return DatabaseInfo{}, err
	}
	d, err := metadata.ParseDatabaseDescriptor(resp.GetDatabaseJson())
	if err != nil {
		return DatabaseInfo{}, fmt.Errorf("fluss: database %s: %w", name, err)
	}
	return DatabaseInfo{Name: name, Descriptor: publicDatabaseDescriptor(d), CreatedTime: resp.GetCreatedTime(), ModifiedTime: resp.GetModifiedTime()}, nil
}

// CreateTable creates a table. With
// ignoreIfExists an existing table is not an error (TABLE_ALREADY_EXIST otherwise).
func (a *Admin) CreateTable(ctx context.Context, path TablePath, desc TableDescriptor, ignoreIfExists bool) error {
	d := desc.internal()
	d.Schema.AssignFieldIDs()
	return a.conn.callCoordinator(ctx, wire.CreateTable, &flusspb.CreateTableRequest{
		TablePath: pbPath(path), TableJson: d.JSON(), IgnoreIfExists: proto.Bool(ignoreIfExists),
	}, &flusspb.CreateTableResponse{})
}

// DropTable drops a table.
func (a *Admin) DropTable(ctx context.Context, path TablePath, ignoreIfNotExists bool) error {
	return a.conn.callCoordinator(ctx, wire.DropTable, &flusspb.DropTableRequest{
		TablePath: pbPath(path), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists),
	}, &flusspb.DropTableResponse{})
}

// GetTableInfo returns a table's metadata.
func (a *Admin) GetTableInfo(ctx context.Context, path TablePath) (*TableInfo, error) {
	var resp flusspb.GetTableInfoResponse
	if err := a.conn.callCoordinator(ctx, wire.GetTableInfo, &flusspb.GetTableInfoRequest{TablePath: pbPath(path)}, &resp); err != nil {
		return nil, err
	}
	desc, err := metadata.ParseTableDescriptor(resp.GetTableJson())
	if err != nil {
		return nil, fmt.Errorf("fluss: table %s: %w", path, err)
	}
	return newTableInfo(path, resp.GetTableId(), resp.GetSchemaId(), desc, resp.GetCreatedTime(), resp.GetModifiedTime()), nil
}

// GetTableSchema returns schema version schemaID of a table, or the latest when schemaID < 0,
// together with its id.
func (a *Admin) GetTableSchema(ctx context.Context, path TablePath, schemaID int32) (Schema, int32, error) {
	req := &flusspb.GetTableSchemaRequest{TablePath: pbPath(path)}
	if schemaID >= 0 {
		req.SchemaId = proto.Int32(schemaID)
	}
	var resp flusspb.GetTableSchemaResponse
	if err := a.conn.callCoordinator(ctx, wire.GetTableSchema, req, &resp); err != nil {
		return Schema{}, 0, err
	}
	s, err := metadata.ParseSchema(resp.GetSchemaJson())
	if err != nil {
		return Schema{}, 0, fmt.Errorf("fluss: schema of %s: %w", path, err)
	}
	return publicSchema(s), resp.GetSchemaId(), nil
}

// ListTables returns the table names of a database.
func (a *Admin) ListTables(ctx context.Context, database string) ([]string, error) {
	var resp flusspb.ListTablesResponse
	if err := a.conn.callCoordinator(ctx, wire.ListTables, &flusspb.ListTablesRequest{DatabaseName: proto.String(database)}, &resp); err != nil {
		return nil, err
	}
	return resp.TableName, nil
}

// TableExists reports whether the table exists.
func (a *Admin) TableExists(ctx context.Context, path TablePath) (bool, error) {
	var resp flusspb.TableExistsResponse
	if err := a.conn.callCoordinator(ctx, wire.TableExists, &flusspb.TableExistsRequest{TablePath: pbPath(path)}, &resp); err != nil {
		return false, err
	}
	return resp.GetExists(), nil
}

// CreatePartition creates the partition with the given spec (partition key -> value).
func (a *Admin) CreatePartition(ctx context.Context, path TablePath, spec map[string]string, ignoreIfExists bool) error {
	// Field 3 is named ignore_if_not_exists but means "ignore if the partition exists".
	return a.conn.callCoordinator(ctx, wire.CreatePartition, &flusspb.CreatePartitionRequest{
		TablePath: pbPath(path), PartitionSpec: pbSpec(spec), IgnoreIfNotExists: proto.Bool(ignoreIfExists),
	}, &flusspb.CreatePartitionResponse{})
}

// DropPartition drops the partition with the given spec.
func (a *Admin) DropPartition(ctx context.Context, path TablePath, spec map[string]string, ignoreIfNotExists bool) error {
	return a.conn.callCoordinator(ctx, wire.DropPartition, &flusspb.DropPartitionRequest{
		TablePath: pbPath(path), PartitionSpec: pbSpec(spec), IgnoreIfNotExists: proto.Bool(ignoreIfNotExists),
	}, &flusspb.DropPartitionResponse{})
}

// ListPartitionInfos lists a partitioned table's partitions. A non-nil partialSpec keeps only
// partitions matching the given keys.
func (a *Admin) ListPartitionInfos(ctx context.Context, path TablePath, partialSpec map[string]string) ([]PartitionInfo, error) {
	req := &flusspb.ListPartitionInfosRequest{TablePath: pbPath(path)}
	if partialSpec != nil {
		req.PartialPartitionSpec = pbSpec(partialSpec)
	}
	var resp flusspb.ListPartitionInfosResponse
	if err := a.conn.callCoordinator(ctx, wire.ListPartitionInfos, req, &resp); err != nil {
		return nil, err
	}
	out := make([]PartitionInfo, 0, len(resp.PartitionsInfo))
	for _, p := range resp.PartitionsInfo {
		info := PartitionInfo{ID: p.GetPartitionId(), Spec: map[string]string{}}
		var values []string
		for _, kv := range p.GetPartitionSpec().GetPartitionKeyValues() {
			info.Spec[kv.GetKey()] = kv.GetValue()
			values = append(values, kv.GetValue())
		}
		info.Name = metadata.PartitionName(values)
		out = append(out, info)
	}
	return out, nil
}

// ListOffsets returns, for each given bucket of a non-partitioned table, the offset selected
// by spec.
func (a *Admin) ListOffsets(ctx context.Context, path TablePath, buckets []int32, spec OffsetSpec) (map[int32]int64, error) {
	return a.listOffsets(ctx, path, "", buckets, spec)
}

// ListPartitionOffsets is ListOffsets for the buckets of one partition (by name).
func (a *Admin) ListPartitionOffsets(ctx context.Context, path TablePath, partition string, buckets []int32, spec OffsetSpec) (map[int32]int64, error) {
	return a.listOffsets(ctx, path, partition, buckets, spec)
}

// BucketLeaders returns the tablet server leading each bucket of a table, or of one partition
// of a partitioned table (partition is its name; "" for a non-partitioned table), as the
// cluster's metadata reports it now.
func (a *Admin) BucketLeaders(ctx context.Context, path TablePath, partition string) (map[int32]ServerNode, error) {
	lb, err := a.leaderBuckets(ctx, path, partition, nil)
	if err != nil {
		return nil, err
	}
	out := map[int32]ServerNode{}
	for n, bs := range lb.byLeader {
		for _, b := range bs {
			out[b] = n
		}
	}
	return out, nil
}

// leaderBuckets is a table's (or partition's) buckets grouped by their leaders.
type leaderBuckets struct {
	tableID, partitionID int64 // partitionID is NoPartition for a non-partitioned table
	byLeader             map[ServerNode][]int32
}

// leaders returns the leaders in server id order, so requests go out in a stable order.
func (lb leaderBuckets) leaders() []ServerNode {
	return slices.SortedFunc(maps.Keys(lb.byLeader), func(x, y ServerNode) int { return int(x.ID - y.ID) })
}

// leaderBuckets resolves path (and partition, by name; "" for a non-partitioned table) from
// fresh metadata and groups buckets (nil: all of them) by their leader.
func (a *Admin) leaderBuckets(ctx context.Context, path TablePath, partition string, buckets []int32) (leaderBuckets, error) {
	m := a.conn.meta
	if err := m.refreshTables(ctx, []TablePath{path}); err != nil {
		return leaderBuckets{}, err
	}
	info, ok := m.tableInfo(path)
	if !ok {
		return leaderBuckets{}, newError(ErrTableNotExist, "table %s does not exist", path)
	}
	lb := leaderBuckets{tableID: info.TableID, partitionID: NoPartition, byLeader: map[ServerNode][]int32{}}
	if partition != "" {
		if err := m.refreshPartition(ctx, path, partition); err != nil {
			return leaderBuckets{}, err
		}
		id, ok := m.partitionID(info.TableID, partition)
		if !ok {
			return leaderBuckets{}, newError(ErrPartitionNotExists, "partition %s of %s does not exist", partition, path)
		}
		lb.partitionID = id
	} else if info.IsPartitioned() {
		return leaderBuckets{}, newError(ErrPartitionNotExists, "table %s is partitioned: name a partition (ListPartitionOffsets, ListPartitionInfos)", path)
	}
	if buckets == nil {
		for b := range info.NumBuckets() {
			buckets = append(buckets, b)
		}
	}
	for _, b := range buckets {
		n, err := m.leader(ctx, path, TableBucket{info.TableID, lb.partitionID, b})
		if err != nil {
			return leaderBuckets{}, err
		}
		lb.byLeader[n] = append(lb.byLeader[n], b)
	}
	return lb, nil
}

func (a *Admin) listOffsets(ctx context.Context, path TablePath, partition string, buckets []int32, spec OffsetSpec) (out map[int32]int64, err error) {
	err = a.conn.retryRouting(ctx, func() error {
		out, err = a.listOffsetsOnce(ctx, path, partition, buckets, spec)
		return err
	})
	return out, err
}

func (a *Admin) listOffsetsOnce(ctx context.Context, path TablePath, partition string, buckets []int32, spec OffsetSpec) (map[int32]int64, error) {
	lb, err := a.leaderBuckets(ctx, path, partition, buckets)
	if err != nil {
		return nil, err
	}
	byLeader, partID := lb.byLeader, lb.partitionID
	out := make(map[int32]int64, len(buckets))
	for _, n := range lb.leaders() {
		req := &flusspb.ListOffsetsRequest{
			FollowerServerId: proto.Int32(clientFollowerID), OffsetType: proto.Int32(spec.kind),
			TableId: proto.Int64(lb.tableID), BucketId: byLeader[n],
		}
		if partID >= 0 {
			req.PartitionId = proto.Int64(partID)
		}
		if spec.kind == offsetKindTimestamp {
			req.StartTimestamp = proto.Int64(spec.timestamp)
		}
		var resp flusspb.ListOffsetsResponse
		if err := a.conn.call(ctx, n, wire.ListOffsets, req, &resp); err != nil {
			return nil, err
		}
		for _, br := range resp.BucketsResp {
			if c := br.GetErrorCode(); c != 0 {
				return nil, &Error{Code: ErrorCode(c), Message: br.GetErrorMessage()}
			}
			if br.Offset == nil {
				return nil, fmt.Errorf("fluss: list offsets: bucket %d has no offset", br.GetBucketId())
			}
			out[br.GetBucketId()] = br.GetOffset()
		}
	}
	return out, nil
}

// GetLatestLakeSnapshot returns the latest lake snapshot of a table (LAKE_SNAPSHOT_NOT_EXIST
// when the table has none).
func (a *Admin) GetLatestLakeSnapshot(ctx context.Context, path TablePath) (LakeSnapshot, error) {
	var resp flusspb.GetLakeSnapshotResponse
	if err := a.conn.callCoordinator(ctx, wire.GetLakeSnapshot, &flusspb.GetLakeSnapshotRequest{TablePath: pbPath(path)}, &resp); err != nil {
		return LakeSnapshot{}, err
	}
	ls := LakeSnapshot{SnapshotID: resp.GetSnapshotId(), BucketOffsets: map[TableBucket]int64{}}
	for _, b := range resp.BucketSnapshots {
		if b.LogOffset == nil {
			continue
		}
		tb := NewTableBucket(resp.GetTableId(), b.GetBucketId())
		if b.PartitionId != nil {
			tb.PartitionID = b.GetPartitionId()
		}
		ls.BucketOffsets[tb] = b.GetLogOffset()
	}
	return ls, nil
}

// GetServerNodes re-reads the cluster's servers from the bootstrap servers and returns the
// coordinator followed by the tablet servers.
func (a *Admin) GetServerNodes(ctx context.Context) ([]ServerNode, error) {
	if err := a.conn.meta.bootstrap(ctx); err != nil {
		return nil, err
	}
	nodes := a.conn.meta.servers()
	slices.SortStableFunc(nodes, func(x, y ServerNode) int {
		if x.Type != y.Type {
			if x.Type == CoordinatorServer {
				return -1
			}
			return 1
		}
		return int(x.ID - y.ID)
	})
	return nodes, nil
}

func pbSpec(spec map[string]string) *flusspb.PbPartitionSpec {
	out := &flusspb.PbPartitionSpec{}
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		out.PartitionKeyValues = append(out.PartitionKeyValues, &flusspb.PbKeyValue{Key: proto.String(k), Value: proto.String(spec[k])})
	}
	return out
}
