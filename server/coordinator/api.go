package coordinator

import (
	"context"
	"maps"
	"net"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

func tablePathOf(p *flusspb.PbTablePath) cluster.TablePath {
	return cluster.TablePath{Database: p.GetDatabaseName(), Table: p.GetTableName()}
}

func pbTablePath(p cluster.TablePath) *flusspb.PbTablePath {
	return &flusspb.PbTablePath{DatabaseName: proto.String(p.Database), TableName: proto.String(p.Table)}
}

func init() { registerAdmin(wire.CreateDatabase, 0, 0, (*Coordinator).handleCreateDatabase) }

func (c *Coordinator) handleCreateDatabase(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreateDatabaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpCreate, auth.ClusterResource()); err != nil {
		return nil, err
	}
	return &flusspb.CreateDatabaseResponse{}, c.CreateDatabase(ctx, r.GetDatabaseName(), r.GetDatabaseJson(), r.GetIgnoreIfExists())
}

func init() { registerAdmin(wire.DropDatabase, 0, 0, (*Coordinator).handleDropDatabase) }

func (c *Coordinator) handleDropDatabase(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropDatabaseRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpDrop, auth.DatabaseResource(r.GetDatabaseName())); err != nil {
		return nil, err
	}
	return &flusspb.DropDatabaseResponse{}, c.DropDatabase(ctx, r.GetDatabaseName(), r.GetIgnoreIfNotExists(), r.GetCascade())
}

func init() { registerAdmin(wire.CreateTable, 0, 0, (*Coordinator).handleCreateTable) }

func (c *Coordinator) handleCreateTable(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.CreateTableRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpCreate, auth.DatabaseResource(r.GetTablePath().GetDatabaseName())); err != nil {
		return nil, err
	}
	return &flusspb.CreateTableResponse{}, c.CreateTable(ctx, tablePathOf(r.GetTablePath()), r.GetTableJson(), r.GetIgnoreIfExists())
}

func init() { registerAdmin(wire.DropTable, 0, 0, (*Coordinator).handleDropTable) }

func (c *Coordinator) handleDropTable(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DropTableRequest
	path, err := c.decodeForTable(req, &r, auth.OpDrop)
	if err != nil {
		return nil, err
	}
	return &flusspb.DropTableResponse{}, c.DropTable(ctx, path, r.GetIgnoreIfNotExists())
}

func init() { registerReadOnly(wire.ListDatabases, 0, 0, (*Coordinator).handleListDatabases) }

func (c *Coordinator) handleListDatabases(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListDatabasesRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	names := slices.DeleteFunc(c.DatabaseNames(), func(n string) bool {
		return !c.allowed(req, auth.OpDescribe, auth.DatabaseResource(n))
	})
	slices.Sort(names)
	resp := &flusspb.ListDatabasesResponse{}
	if !r.GetIncludeSummary() {
		resp.DatabaseName = names
		return resp, nil
	}
	for _, n := range names {
		d, ok := c.Database(n)
		if !ok {
			continue
		}
		tables, _ := c.TableNames(n)
		resp.DatabaseSummary = append(resp.DatabaseSummary, &flusspb.PbDatabaseSummary{
			DatabaseName: proto.String(n), CreatedTime: proto.Int64(d.CreatedMs), TableCount: proto.Int32(int32(len(tables))),
		})
	}
	return resp, nil
}

func init() { registerReadOnly(wire.DatabaseExists, 0, 0, (*Coordinator).handleDatabaseExists) }

func (c *Coordinator) handleDatabaseExists(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DatabaseExistsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	// As in Fluss, the default database is exempt: Flink's catalog checks it when it opens.
	if r.GetDatabaseName() != DefaultDatabase && !c.allowed(req, auth.OpDescribe, auth.DatabaseResource(r.GetDatabaseName())) {
		return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(false)}, nil
	}
	_, ok := c.Database(r.GetDatabaseName())
	return &flusspb.DatabaseExistsResponse{Exists: proto.Bool(ok)}, nil
}

func init() { registerReadOnly(wire.GetDatabaseInfo, 0, 0, (*Coordinator).handleGetDatabaseInfo) }

func (c *Coordinator) handleGetDatabaseInfo(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetDatabaseInfoRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := c.authorize(req, auth.OpDescribe, auth.DatabaseResource(r.GetDatabaseName())); err != nil {
		return nil, err
	}
	d, ok := c.Database(r.GetDatabaseName())
	if !ok {
		return nil, ferr.New(ferr.DatabaseNotExist, "Database %s does not exist.", r.GetDatabaseName())
	}
	return &flusspb.GetDatabaseInfoResponse{DatabaseJson: d.JSON, CreatedTime: proto.Int64(d.CreatedMs), ModifiedTime: proto.Int64(d.ModifiedMs)}, nil
}

func init() { registerReadOnly(wire.ListTables, 0, 0, (*Coordinator).handleListTables) }

func (c *Coordinator) handleListTables(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.ListTablesRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	names, err := c.TableNames(r.GetDatabaseName())
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(n string) bool {
		return !c.allowed(req, auth.OpDescribe, auth.TableResource(r.GetDatabaseName(), n))
	})
	slices.Sort(names)
	return &flusspb.ListTablesResponse{TableName: names}, nil
}

func init() { registerReadOnly(wire.TableExists, 0, 0, (*Coordinator).handleTableExists) }

func (c *Coordinator) handleTableExists(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.TableExistsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	path := tablePathOf(r.GetTablePath())
	if !c.allowed(req, auth.OpDescribe, tableResource(path)) {
		return &flusspb.TableExistsResponse{Exists: proto.Bool(false)}, nil
	}
	_, ok := c.TableByPath(path)
	return &flusspb.TableExistsResponse{Exists: proto.Bool(ok)}, nil
}

func (c *Coordinator) table(p *flusspb.PbTablePath) (*cluster.TableInfo, error) {
	path := tablePathOf(p)
	c.catchUpTable(path)
	t, ok := c.TableByPath(path)
	if !ok {
		return nil, ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	return t, nil
}

func init() { registerReadOnly(wire.GetTableInfo, 0, 0, (*Coordinator).handleGetTableInfo) }

func (c *Coordinator) handleGetTableInfo(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetTableInfoRequest
	t, err := c.decodeForTableInfo(req, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	return &flusspb.GetTableInfoResponse{
		TableId: proto.Int64(t.ID), SchemaId: proto.Int32(t.SchemaID), TableJson: c.servedTableJSON(t),
		CreatedTime: proto.Int64(t.CreatedMs), ModifiedTime: proto.Int64(t.ModifiedMs),
	}, nil
}

func init() { registerReadOnly(wire.GetTableSchema, 0, 0, (*Coordinator).handleGetTableSchema) }

func (c *Coordinator) handleGetTableSchema(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetTableSchemaRequest
	t, err := c.decodeForTableInfo(req, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	id := t.SchemaID
	if r.SchemaId != nil {
		id = r.GetSchemaId()
	}
	js, ok := c.schemaJSON(t.ID, id)
	if !ok {
		return nil, ferr.New(ferr.SchemaNotExist, "Schema %d of table %s does not exist.", id, t.Path)
	}
	return &flusspb.GetTableSchemaResponse{SchemaId: proto.Int32(id), SchemaJson: js}, nil
}

func init() {
	registerReadOnly(wire.GetFilesystemSecurityToken, 0, 0, (*Coordinator).handleGetFileSystemSecurityToken)
}

// handleGetFileSystemSecurityToken answers the remote store's scheme and what a client needs
// to open its objects (remote.Storage.Token: nothing for a file store).
func (c *Coordinator) handleGetFileSystemSecurityToken(ctx context.Context, req *wire.Request) (proto.Message, error) {
	if c.opts.Remote == nil {
		return &flusspb.GetFileSystemSecurityTokenResponse{Schema: proto.String("file"), Token: []byte{}}, nil
	}
	t := c.opts.Remote.Token()
	resp := &flusspb.GetFileSystemSecurityTokenResponse{Schema: proto.String(t.Scheme), Token: t.Token, ExpirationTime: t.ExpirationTime}
	for _, k := range slices.Sorted(maps.Keys(t.AdditionInfo)) {
		resp.AdditionInfo = append(resp.AdditionInfo, &flusspb.PbKeyValue{Key: proto.String(k), Value: proto.String(t.AdditionInfo[k])})
	}
	return resp, nil
}

func init() { registerReadOnly(wire.GetMetadata, 0, 0, (*Coordinator).handleGetMetadata) }

func (c *Coordinator) handleGetMetadata(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.MetadataRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	localHost, _, _ := net.SplitHostPort(req.LocalAddr().String())
	coord, okCoord, tablets := c.topo.Resolve(req.Listener, localHost)
	resp := &flusspb.MetadataResponse{}
	if okCoord {
		resp.CoordinatorServer = pbServerNode(cluster.CoordinatorNodeID, coord)
	}
	ids := make([]int32, 0, len(tablets))
	for id := range tablets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	leader := int32(-1)
	if len(ids) > 0 {
		leader = ids[0]
	}
	if err := c.fillTableMetadata(req, &r, resp, leader); err != nil {
		return nil, err
	}
	// A leader that has just left the live set (killed, its lease expired, its buckets not
	// yet moved) is listed with its last endpoint: see cluster.Topology.DepartedTabletServer.
	for _, id := range leadersOf(resp) {
		if _, live := tablets[id]; live {
			continue
		}
		if e, ok := c.topo.DepartedTabletServer(req.Listener, localHost, id); ok {
			tablets[id] = e
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		resp.TabletServers = append(resp.TabletServers, pbServerNode(id, tablets[id]))
	}
	return resp, nil
}

// leadersOf returns the distinct leader ids named by the buckets of resp.
func leadersOf(resp *flusspb.MetadataResponse) []int32 {
	seen := map[int32]bool{}
	var out []int32
	add := func(bms []*flusspb.PbBucketMetadata) {
		for _, bm := range bms {
			if bm.LeaderId != nil && !seen[bm.GetLeaderId()] {
				seen[bm.GetLeaderId()] = true
				out = append(out, bm.GetLeaderId())
			}
		}
	}
	for _, tm := range resp.TableMetadata {
		add(tm.BucketMetadata)
	}
	for _, pm := range resp.PartitionMetadata {
		add(pm.BucketMetadata)
	}
	return out
}

// fillTableMetadata adds to resp the tables and partitions r asks for; leader is the tablet
// server that leads every bucket on the single node.
func (c *Coordinator) fillTableMetadata(req *wire.Request, r *flusspb.MetadataRequest, resp *flusspb.MetadataResponse, leader int32) error {
	for _, p := range r.GetTablePath() {
		if !c.allowed(req, auth.OpDescribe, tableResource(tablePathOf(p))) {
			continue // as Fluss: tables the session may not describe are left out
		}
		t, err := c.table(p)
		if err != nil {
			return err
		}
		tm := &flusspb.PbTableMetadata{
			TablePath: pbTablePath(t.Path), TableId: proto.Int64(t.ID), SchemaId: proto.Int32(t.SchemaID),
			TableJson: c.servedTableJSON(t), CreatedTime: proto.Int64(t.CreatedMs), ModifiedTime: proto.Int64(t.ModifiedMs),
		}
		if !t.Partitioned() {
			tm.BucketMetadata = c.bucketMetadataOf(t, cluster.NoPartition, leader)
		}
		resp.TableMetadata = append(resp.TableMetadata, tm)
	}
	for _, pp := range r.GetPartitionsPath() {
		t, ok := c.TableByPath(cluster.TablePath{Database: pp.GetDatabaseName(), Table: pp.GetTableName()})
		if !ok {
			return ferr.New(ferr.TableNotExist, "Table %s.%s does not exist.", pp.GetDatabaseName(), pp.GetTableName())
		}
		if !c.allowed(req, auth.OpDescribe, tableResource(t.Path)) {
			continue
		}
		p, ok := c.PartitionByName(t.ID, pp.GetPartitionName())
		if !ok {
			return ferr.New(ferr.PartitionNotExists, "Table partition '%s' does not exist.", t.Path.String()+"(p="+pp.GetPartitionName()+")")
		}
		resp.PartitionMetadata = append(resp.PartitionMetadata, c.partitionMetadata(t, p, leader))
	}
	for _, id := range r.GetPartitionsId() {
		p, ok := c.PartitionByID(id)
		if !ok {
			return ferr.New(ferr.PartitionNotExists, "Partition with id %d does not exist.", id)
		}
		t, ok := c.TableByID(p.TableID)
		if !ok || !c.allowed(req, auth.OpDescribe, tableResource(t.Path)) {
			return ferr.New(ferr.PartitionNotExists, "The partition id '%d' does not exist or you don't have permission to access it.", id)
		}
		resp.PartitionMetadata = append(resp.PartitionMetadata, c.partitionMetadata(t, p, leader))
	}
	return nil
}

func (c *Coordinator) partitionMetadata(t *cluster.TableInfo, p *cluster.PartitionInfo, leader int32) *flusspb.PbPartitionMetadata {
	return &flusspb.PbPartitionMetadata{
		TableId: proto.Int64(t.ID), PartitionName: proto.String(p.Name), PartitionId: proto.Int64(p.ID),
		BucketMetadata: c.bucketMetadataOf(t, p.ID, leader),
	}
}

// bucketMetadataOf describes the buckets of a table or partition: on the single node every
// bucket is led by its one tablet server (leader); in a cluster each bucket's stored state
// gives its leader (absent while it has none), replicas and leader epoch.
func (c *Coordinator) bucketMetadataOf(t *cluster.TableInfo, partitionID int64, leader int32) []*flusspb.PbBucketMetadata {
	if !c.clustered() {
		return bucketMetadata(t.NumBuckets(), leader)
	}
	states, known := c.opts.Cluster.BucketStates(t.ID, partitionID, t.NumBuckets())
	out := make([]*flusspb.PbBucketMetadata, len(states))
	for i, st := range states {
		bm := &flusspb.PbBucketMetadata{BucketId: proto.Int32(int32(i))}
		if known[i] {
			if st.Leader != cluster.NoLeader {
				bm.LeaderId = proto.Int32(st.Leader)
			}
			bm.ReplicaId = st.Replicas
			bm.LeaderEpoch = proto.Int32(st.LeaderEpoch)
		}
		out[i] = bm
	}
	return out
}

func bucketMetadata(n int32, leader int32) []*flusspb.PbBucketMetadata {
	out := make([]*flusspb.PbBucketMetadata, n)
	for i := range out {
		bm := &flusspb.PbBucketMetadata{BucketId: proto.Int32(int32(i))}
		if leader >= 0 {
			bm.LeaderId = proto.Int32(leader)
			bm.ReplicaId = []int32{leader}
			bm.LeaderEpoch = proto.Int32(0)
		}
		out[i] = bm
	}
	return out
}

func pbServerNode(id int32, e cluster.Endpoint) *flusspb.PbServerNode {
	return &flusspb.PbServerNode{NodeId: proto.Int32(id), Host: proto.String(e.Host), Port: proto.Int32(e.Port)}
}
