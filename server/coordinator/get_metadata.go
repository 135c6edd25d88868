package coordinator

import (
	"context"
	"net"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

func init() { metadataAPIs.readOnly(wire.GetMetadata, 0, 0, (*metadataService).handleGetMetadata) }

func (s *metadataService) handleGetMetadata(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.MetadataRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	localHost, _, _ := net.SplitHostPort(req.LocalAddr().String())
	coord, okCoord, tablets := s.topo.Resolve(req.Listener, localHost)
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
	if err := s.fillTableMetadata(req, &r, resp, leader); err != nil {
		return nil, err
	}
	// A leader that has just left the live set (killed, its lease expired, its buckets not
	// yet moved) is listed with its last endpoint: see cluster.Topology.DepartedTabletServer.
	for _, id := range leadersOf(resp) {
		if _, live := tablets[id]; live {
			continue
		}
		if e, ok := s.topo.DepartedTabletServer(req.Listener, localHost, id); ok {
			tablets[id] = e
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		node := pbServerNode(id, tablets[id])
		if rack := s.topo.Rack(id); rack != "" {
			node.Rack = proto.String(rack) // PbServerNode.rack, as Fluss >= 0.7; absent for none
		}
		resp.TabletServers = append(resp.TabletServers, node)
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
func (s *metadataService) fillTableMetadata(req *wire.Request, r *flusspb.MetadataRequest, resp *flusspb.MetadataResponse, leader int32) error {
	for _, p := range r.GetTablePath() {
		if !s.access.allowed(req, auth.OpDescribe, tableResource(tablePathOf(p))) {
			continue // as Fluss: tables the session may not describe are left out
		}
		t, err := s.catalog.table(p)
		if err != nil {
			return err
		}
		tm := &flusspb.PbTableMetadata{
			TablePath: pbTablePath(t.Path), TableId: proto.Int64(t.ID), SchemaId: proto.Int32(t.SchemaID),
			TableJson: s.servedTableJSON(t), CreatedTime: proto.Int64(t.CreatedMs), ModifiedTime: proto.Int64(t.ModifiedMs),
		}
		if !t.Partitioned() {
			tm.BucketMetadata = s.bucketMetadataOf(t, cluster.NoPartition, leader)
		}
		resp.TableMetadata = append(resp.TableMetadata, tm)
	}
	for _, pp := range r.GetPartitionsPath() {
		t, ok := s.catalog.TableByPath(cluster.TablePath{Database: pp.GetDatabaseName(), Table: pp.GetTableName()})
		if !ok {
			return ferr.New(ferr.TableNotExist, "Table %s.%s does not exist.", pp.GetDatabaseName(), pp.GetTableName())
		}
		if !s.access.allowed(req, auth.OpDescribe, tableResource(t.Path)) {
			continue
		}
		p, ok := s.catalog.PartitionByName(t.ID, pp.GetPartitionName())
		if !ok {
			return ferr.New(ferr.PartitionNotExists, "Table partition '%s' does not exist.", t.Path.String()+"(p="+pp.GetPartitionName()+")")
		}
		resp.PartitionMetadata = append(resp.PartitionMetadata, s.partitionMetadata(t, p, leader))
	}
	for _, id := range r.GetPartitionsId() {
		p, ok := s.catalog.PartitionByID(id)
		if !ok {
			return ferr.New(ferr.PartitionNotExists, "Partition with id %d does not exist.", id)
		}
		t, ok := s.catalog.TableByID(p.TableID)
		if !ok || !s.access.allowed(req, auth.OpDescribe, tableResource(t.Path)) {
			return ferr.New(ferr.PartitionNotExists, "The partition id '%d' does not exist or you don't have permission to access it.", id)
		}
		resp.PartitionMetadata = append(resp.PartitionMetadata, s.partitionMetadata(t, p, leader))
	}
	return nil
}

func (s *metadataService) partitionMetadata(t *cluster.TableInfo, p *cluster.PartitionInfo, leader int32) *flusspb.PbPartitionMetadata {
	return &flusspb.PbPartitionMetadata{
		TableId: proto.Int64(t.ID), PartitionName: proto.String(p.Name), PartitionId: proto.Int64(p.ID),
		BucketMetadata: s.bucketMetadataOf(t, p.ID, leader),
	}
}

// bucketMetadataOf describes the buckets of a table or partition: on the single node every
// bucket is led by its one tablet server (leader); in a cluster each bucket's stored state
// gives its leader (absent while it has none), replicas and leader epoch.
func (s *metadataService) bucketMetadataOf(t *cluster.TableInfo, partitionID int64, leader int32) []*flusspb.PbBucketMetadata {
	if s.states == nil {
		return bucketMetadata(t.NumBuckets(), leader)
	}
	states, known := s.states.BucketStates(t.ID, partitionID, t.NumBuckets())
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
