package lakeconf

import (
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// The protocol between the tablet server (host) and the tiering process (child): two net/rpc
// connections (gob encoding) over Unix socket pairs the child inherits as file descriptors 3
// and 4. On fd 3 the host serves HostService; on fd 4 the child serves TiererService. The
// child exits when either connection closes, so it never outlives the server.
const (
	// HostFD is the child's end of the connection on which the host serves HostService.
	HostFD = 3
	// TiererFD is the child's end of the connection on which the child serves TiererService.
	TiererFD = 4

	HostService   = "Host"
	TiererService = "Tierer"
)

// Methods of HostService: what the tiering reads of the tablet server, and what it reports.
const (
	MethodConfig     = HostService + ".Config"     // Nothing → Config
	MethodReady      = HostService + ".Ready"      // ReadyArgs → Nothing
	MethodBuckets    = HostService + ".Buckets"    // Nothing → []BucketRef
	MethodLogOffsets = HostService + ".LogOffsets" // cluster.Bucket → LogOffsets
	MethodRead       = HostService + ".Read"       // ReadArgs → []byte
	MethodTableByID  = HostService + ".TableByID"  // int64 → TableReply
	MethodSchema     = HostService + ".Schema"     // SchemaArgs → SchemaReply
	MethodOffsets    = HostService + ".Offsets"    // OffsetsArgs → Nothing
)

// Methods of TiererService: what the tablet server asks of the tiering.
const (
	MethodSnapshot = TiererService + ".Snapshot" // SnapshotArgs → SnapshotReply
	MethodMetrics  = TiererService + ".Metrics"  // Nothing → MetricsReply
)

// Nothing is the argument or reply of a call without one (gob cannot send an empty struct).
type Nothing struct{ Unused bool }

// ReadyArgs reports the outcome of the child opening the lake catalog; Err is "" on success.
type ReadyArgs struct{ Err string }

// BucketRef is one bucket the server leads, with its log's bounds when listed.
type BucketRef struct {
	Table         *cluster.TableInfo
	Partition     *cluster.PartitionInfo // nil for non-partitioned tables
	ID            cluster.Bucket
	LogStart      int64
	HighWatermark int64
}

// LogOffsets are a bucket log's bounds now.
type LogOffsets struct{ LogStart, HighWatermark int64 }

// ReadArgs asks for whole record batches of a bucket from Offset on, within about MaxBytes
// (at least one batch when there is one below the high watermark).
type ReadArgs struct {
	Bucket   cluster.Bucket
	Offset   int64
	MaxBytes int
}

// TableReply is a catalog lookup's answer.
type TableReply struct {
	Table *cluster.TableInfo
	Found bool
}

// SchemaArgs names one schema of a table.
type SchemaArgs struct {
	TableID  int64
	SchemaID int32
}

// SchemaReply is a schema lookup's answer.
type SchemaReply struct {
	Schema metadata.Schema
	Found  bool
}

// OffsetsArgs reports a table's committed tiered offsets; Known false: not known (forgotten
// after a failed commit).
type OffsetsArgs struct {
	TableID int64
	Offsets Offsets
	Known   bool
}

// SnapshotArgs asks for the table's latest tiering snapshot, or the one with SnapshotID.
type SnapshotArgs struct {
	Table      *cluster.TableInfo
	SnapshotID *int64
}

// SnapshotReply is the snapshot; Found false: the table has none (ErrNoSnapshot).
type SnapshotReply struct {
	Snapshot LakeSnapshot
	Found    bool
}

// MetricsReply holds the tiering's metric families, each a protobuf-encoded
// io.prometheus.client.MetricFamily.
type MetricsReply struct{ Families [][]byte }
