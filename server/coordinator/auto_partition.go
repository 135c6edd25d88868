package coordinator

import (
	"context"
	"slices"
	"time"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// RunAutoPartition pre-creates and expires partitions of every auto-partitioned table for
// the coordinator's current time. It runs when such a table is created and then periodically;
// failures are logged, as in Fluss.
func (s *partitionService) RunAutoPartition(ctx context.Context) {
	if s.role.standby() {
		return
	}
	tables := s.cache.tablesWhere(func(t *cluster.TableInfo) bool {
		return t.Partitioned() && t.Descriptor.Properties.AutoPartition().Enabled
	})
	for _, t := range tables {
		s.autoPartition(ctx, t)
	}
}

func (s *partitionService) autoPartition(ctx context.Context, t *cluster.TableInfo) {
	ap := t.Descriptor.Properties.AutoPartition()
	if !ap.Enabled {
		return
	}
	defer s.catalog.lockDDL()()
	if cur, ok := s.catalog.TableByID(t.ID); !ok || cur != t {
		return // dropped or replaced meanwhile
	}
	now := s.now()
	// Pre-create the current unit and the following ones (only single-key tables; tables
	// with several partition keys have num-precreate 0).
	if len(t.Descriptor.PartitionKeys) == 1 {
		for i := 0; i < ap.NumPrecreate; i++ {
			v, err := metadata.AutoPartitionTime(now, i, ap.TimeUnit, ap.Format(), ap.Location)
			if err != nil {
				s.log.Warn("auto-partition: cannot format partition time", "table", t.Path, "err", err)
				return
			}
			if _, err := s.createPartitionLocked(ctx, t, []string{v}, true); err != nil {
				s.log.Warn("auto-partition: cannot create partition", "table", t.Path, "partition", v, "err", err)
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
	for _, p := range s.catalog.Partitions(t.ID) {
		// Partition time values of one format sort as strings in time order.
		if keyIdx < len(p.Values) && p.Values[keyIdx] < oldest {
			if err := s.dropPartitionLocked(ctx, t, p); err != nil {
				s.log.Warn("auto-partition: cannot drop expired partition", "table", t.Path, "partition", p.Name, "err", err)
			}
		}
	}
}

// runAutoPartitionLoop calls RunAutoPartition every interval until ctx ends.
func (s *partitionService) runAutoPartitionLoop(ctx context.Context, every time.Duration) {
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
			s.RunAutoPartition(ctx)
		}
	}
}
