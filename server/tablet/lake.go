package tablet

import (
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakehost"
)

// LakeBuckets implements lakehost.Source: every bucket this server leads, with its table as the
// catalog has it now (so that ALTER TABLE of table.datalake.* takes effect on the next round)
// and its partition.
func (s *replicaManager) LakeBuckets() []lakehost.Bucket {
	s.mu.RLock()
	rs := make([]*Replica, 0, len(s.replicas))
	for _, r := range s.replicas {
		if r.repl == nil || r.repl.leading.Load() { // only a bucket's leader tiers it
			rs = append(rs, r)
		}
	}
	s.mu.RUnlock()
	out := make([]lakehost.Bucket, 0, len(rs))
	for _, r := range rs {
		t, ok := s.opts.Catalog.TableByID(r.Bucket.TableID)
		if !ok {
			continue // dropped meanwhile
		}
		b := lakehost.Bucket{Table: t, ID: r.Bucket, Log: r.Log}
		if r.Bucket.PartitionID != cluster.NoPartition {
			if b.Partition, ok = s.opts.Catalog.PartitionByID(r.Bucket.PartitionID); !ok {
				continue
			}
		}
		out = append(out, b)
	}
	return out
}
