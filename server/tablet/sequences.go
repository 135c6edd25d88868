package tablet

import (
	"context"
	"fmt"
)

// sequences are the counters of auto-increment columns (kvstore.SequenceSource) in the
// metadata store: one per table id and column id, so a dropped and re-created table starts
// again at 1, every partition and bucket of a table shares one counter, and a counter is
// never handed out twice (Fluss keeps the same counter in ZooKeeper, per table path and
// column id: ZkSequenceGeneratorFactory).
type sequences struct{ ids IDRanges }

// sequenceName is the counter of a table's auto-increment column.
func sequenceName(tableID int64, columnID int32) string {
	return fmt.Sprintf("autoinc/%d/%d", tableID, columnID)
}

// Allocate implements kvstore.SequenceSource.
func (s sequences) Allocate(ctx context.Context, tableID int64, columnID int32, n int64) (int64, error) {
	prev, err := s.ids.AddID(ctx, sequenceName(tableID, columnID), n)
	if err != nil {
		return 0, fmt.Errorf("auto-increment range of table %d column %d: %w", tableID, columnID, err)
	}
	return prev, nil
}
