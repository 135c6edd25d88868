package tablet

import (
	"cmp"
	"slices"

	"github.com/cockroachdb/pebble"
)

// Replicas returns the buckets this server holds (leads or follows), ordered by table, partition and bucket.
// The replicas may be closed concurrently by a drop; readers of their logs see a closed log.
func (s *replicaManager) Replicas() []*Replica {
	s.mu.RLock()
	out := make([]*Replica, 0, len(s.replicas))
	for _, r := range s.replicas {
		out = append(out, r)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Replica) int {
		return cmp.Or(cmp.Compare(a.Bucket.TableID, b.Bucket.TableID),
			cmp.Compare(a.Bucket.PartitionID, b.Bucket.PartitionID), cmp.Compare(a.Bucket.Bucket, b.Bucket.Bucket))
	})
	return out
}

// PebbleMetrics returns the metrics of the Pebble instance holding every primary-key
// bucket's state.
func (s *replicaManager) PebbleMetrics() *pebble.Metrics { return s.kv.Metrics() }

// IsLeader reports whether this server leads the bucket (a standalone bucket always).
func (r *Replica) IsLeader() bool { return r.repl == nil || r.repl.leading.Load() }
