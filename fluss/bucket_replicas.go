package fluss

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// BucketReplicas returns the replica set of each bucket of a table (of one partition, by
// name; "" for a non-partitioned table) as the cluster's metadata reports it: the ids of the
// tablet servers holding a replica, in assignment order. Fluss's metadata carries the
// replicas and the leader (BucketLeaders), not the in-sync replica set.
func (a *Admin) BucketReplicas(ctx context.Context, path TablePath, partition string) (map[int32][]int32, error) {
	req := &flusspb.MetadataRequest{TablePath: []*flusspb.PbTablePath{pbPath(path)}}
	if partition != "" {
		req.PartitionsPath = []*flusspb.PbPhysicalTablePath{{
			DatabaseName: proto.String(path.Database), TableName: proto.String(path.Table), PartitionName: proto.String(partition),
		}}
	}
	var resp flusspb.MetadataResponse
	if err := a.conn.callAnyTablet(ctx, wire.GetMetadata, req, &resp); err != nil {
		return nil, err
	}
	var buckets []*flusspb.PbBucketMetadata
	found := false
	for _, tm := range resp.TableMetadata {
		if tm.GetTablePath().GetDatabaseName() != path.Database || tm.GetTablePath().GetTableName() != path.Table {
			continue
		}
		found = true
		if partition == "" {
			buckets = tm.BucketMetadata
			break
		}
		for _, pm := range resp.PartitionMetadata {
			if pm.GetTableId() == tm.GetTableId() && pm.GetPartitionName() == partition {
				buckets = pm.BucketMetadata
			}
		}
		if buckets == nil {
			return nil, newError(ErrPartitionNotExists, "partition %s of %s does not exist", partition, path)
		}
	}
	if !found {
		return nil, newError(ErrTableNotExist, "table %s does not exist", path)
	}
	out := make(map[int32][]int32, len(buckets))
	for _, b := range buckets {
		out[b.GetBucketId()] = append([]int32(nil), b.GetReplicaId()...)
	}
	return out, nil
}
