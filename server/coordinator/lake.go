package coordinator

import (
	"context"
	"sync/atomic"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

// LakeSnapshots reads a table's tiering snapshots from the data lake (lakehost.Host).
type LakeSnapshots interface {
	// Snapshot returns the latest tiering snapshot of the table, or the one with id
	// snapshotID; lakeconf.ErrNoSnapshot when there is none.
	Snapshot(ctx context.Context, t *cluster.TableInfo, snapshotID *int64) (*lakeconf.LakeSnapshot, error)
}

// lakeService serves GET_LAKE_SNAPSHOT from the data lake (lakehost.Host). Without a lake
// connected it answers as a Fluss cluster without a data lake does.
type lakeService struct {
	catalog tableReader
	access  access
	lake    atomic.Pointer[LakeSnapshots] // nil: no data lake configured
}

var lakeAPIs apiTable[*lakeService]

// connect connects GET_LAKE_SNAPSHOT to the data lake.
func (l *lakeService) connect(s LakeSnapshots) { l.lake.Store(&s) }
