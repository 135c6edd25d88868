package coordinator

import (
	"context"
	"errors"
	"maps"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
)

// LakeSnapshots reads a table's tiering snapshots from the data lake (lakehost.Host).
type LakeSnapshots interface {
	// Snapshot returns the latest tiering snapshot of the table, or the one with id
	// snapshotID; lakeconf.ErrNoSnapshot when there is none.
	Snapshot(ctx context.Context, t *cluster.TableInfo, snapshotID *int64) (*lakeconf.LakeSnapshot, error)
}

// SetLakeSnapshots connects GET_LAKE_SNAPSHOT to the data lake. Without it the coordinator
// answers as a Fluss cluster without a data lake does.
func (c *Coordinator) SetLakeSnapshots(l LakeSnapshots) { c.lake.Store(&l) }

func init() { registerReadOnly(wire.GetLakeSnapshot, 0, 0, (*Coordinator).handleGetLakeSnapshot) }

// servedTableJSON is the table_json a client gets for t: the stored descriptor, plus, when the
// table is lake-enabled, the lake catalog options readers open the Iceberg table with
// (Options.LakeTableOptions), as Fluss's TableRegistration.toTableInfo adds them. They are added
// when served, never stored, so a change of the server's lake options reaches every table and
// disabling the lake hides them.
func (c *Coordinator) servedTableJSON(t *cluster.TableInfo) []byte {
	if len(c.opts.LakeTableOptions) == 0 || !t.Descriptor.DataLakeEnabled() {
		return t.DescriptorJSON
	}
	d := t.Descriptor
	d.Properties = make(map[string]string, len(t.Descriptor.Properties)+len(c.opts.LakeTableOptions))
	maps.Copy(d.Properties, t.Descriptor.Properties)
	maps.Copy(d.Properties, c.opts.LakeTableOptions)
	return d.JSON()
}

// handleGetLakeSnapshot answers with the table's tiering snapshot as Iceberg holds it: the
// snapshot id and every tiered bucket's log end offset (Fluss RpcServiceBase.getLakeSnapshot).
// Every Strom tiering commit is readable once committed, so readable=true returns the latest.
func (c *Coordinator) handleGetLakeSnapshot(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.GetLakeSnapshotRequest
	t, err := c.decodeForTableInfo(req, &r, auth.OpDescribe)
	if err != nil {
		return nil, err
	}
	if r.GetReadable() && r.SnapshotId != nil {
		return nil, ferr.New(ferr.UnknownServerError, "GetLakeSnapshotRequest cannot set both snapshot_id and readable=true; use one or the other to specify either a snapshot by id or the latest readable snapshot.")
	}
	kind := "snapshot"
	if r.GetReadable() {
		kind = "readable snapshot"
	}
	notExist := func() error {
		if r.SnapshotId != nil {
			return ferr.New(ferr.LakeSnapshotNotExist, "Lake table %s doesn't exist for table: %s, table id: %d, snapshot id: %d", kind, t.Path, t.ID, r.GetSnapshotId())
		}
		return ferr.New(ferr.LakeSnapshotNotExist, "Lake table %s doesn't exist for table: %s, table id: %d", kind, t.Path, t.ID)
	}
	lp := c.lake.Load()
	if lp == nil || !t.Descriptor.DataLakeEnabled() {
		return nil, notExist()
	}
	s, err := (*lp).Snapshot(ctx, t, r.SnapshotId)
	if errors.Is(err, lakeconf.ErrNoSnapshot) {
		return nil, notExist()
	}
	if err != nil {
		return nil, ferr.New(ferr.UnknownServerError, "Failed to get lake table snapshot for table: %s, table id: %d: %v", t.Path, t.ID, err)
	}
	resp := &flusspb.GetLakeSnapshotResponse{TableId: proto.Int64(t.ID), SnapshotId: proto.Int64(s.SnapshotID)}
	for k, off := range s.Offsets {
		b := &flusspb.PbLakeSnapshotForBucket{BucketId: proto.Int32(k.Bucket), LogOffset: proto.Int64(off)}
		if k.PartitionID != cluster.NoPartition {
			b.PartitionId = proto.Int64(k.PartitionID)
		}
		resp.BucketSnapshots = append(resp.BucketSnapshots, b)
	}
	return resp, nil
}
