package coordinator

import (
	"log/slog"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// partitionService creates and drops the partitions of partitioned tables, by hand
// (CREATE_PARTITION, DROP_PARTITION, LIST_PARTITION_INFOS) and automatically (time-based
// pre-creation and retention, auto_partition.go). The partitions themselves are part of the
// catalog's in-memory copy (a reload replaces tables and partitions together): this service
// writes them to the store, then publishes them through the catalog, under the catalog's
// DDL lock.
type partitionService struct {
	catalog partitionCatalog
	cache   partitionCache
	store   partitionStore
	place   placement // nil on the single node
	role    role
	access  access
	now     func() time.Time
	log     *slog.Logger
	// maxPartitionNum is max.partition.num: the most partitions a table holds (0: no limit).
	maxPartitionNum int32
	// maxBucketNum is max.bucket.num: the most buckets a partitioned table holds, summed over
	// its partitions (0: metadata.DefaultMaxBucketNum).
	maxBucketNum int32
	// replicas is the single node's tablet server (nil in a cluster and before start).
	replicas cluster.ReplicaManager
}

var partitionAPIs apiTable[*partitionService]

// partitionCatalog is the part of the catalog the partition service reads (Catalog).
type partitionCatalog interface {
	TableByPath(p cluster.TablePath) (*cluster.TableInfo, bool)
	TableByID(id int64) (*cluster.TableInfo, bool)
	PartitionByName(tableID int64, name string) (*cluster.PartitionInfo, bool)
	Partitions(tableID int64) []*cluster.PartitionInfo
	// lockDDL takes the DDL lock every catalog change holds, and returns its release.
	lockDDL() func()
}

// partitionCache is the part of the catalog's in-memory copy the partition service
// publishes its stored changes to (catalogCache).
type partitionCache interface {
	tablesWhere(keep func(*cluster.TableInfo) bool) []*cluster.TableInfo
	addPartition(p *cluster.PartitionInfo)
	dropPartition(p *cluster.PartitionInfo)
}

// partitionedTable returns the table at path, or the errors Fluss gives for a missing or
// non-partitioned table.
func (s *partitionService) partitionedTable(path cluster.TablePath) (*cluster.TableInfo, error) {
	t, ok := s.catalog.TableByPath(path)
	if !ok {
		return nil, ferr.New(ferr.TableNotExist, "Table %s does not exist.", path)
	}
	if !t.Partitioned() {
		return nil, ferr.New(ferr.TableNotPartitionedException, "Table %s is not partitioned.", path)
	}
	return t, nil
}

func specOf(s *flusspb.PbPartitionSpec) map[string]string {
	m := make(map[string]string, len(s.GetPartitionKeyValues()))
	for _, kv := range s.GetPartitionKeyValues() {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}
