package tablet

import (
	"context"

	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// RemoteLog is the tiered part of bucket logs (server/remotelog.Manager): what FETCH_LOG
// answers for an offset below the local log start, and the remote log start LIST_OFFSETS
// earliest reports. Its methods answer from memory, except the first call for a bucket,
// which reads the bucket's committed record (bounded in time by the implementation).
type RemoteLog interface {
	// LogStartOffset returns the first offset of b's committed remote log, if any.
	LogStartOffset(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket) (int64, bool)
	// OffsetForTimestamp returns an offset of b's remote log from which every record with a
	// commit timestamp >= ts is read, if a remote segment reaches ts.
	OffsetForTimestamp(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket, ts int64) (int64, bool)
	// FetchInfo returns the remote segments holding offset on, or nil.
	FetchInfo(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket, offset int64) *flusspb.PbRemoteLogFetchInfo
}

// tieredLog is the local view of the tiered part of bucket logs: the log start clients see
// and where offsets below the local log start are in remote storage. Without
// Options.RemoteLog every answer is the local log's. It owns no state.
type tieredLog struct {
	opts tieredLogOptions
}

// tieredLogOptions are the parts of Options tieredLog reads.
type tieredLogOptions struct {
	RemoteLog RemoteLog
	Catalog   cluster.Catalog
}

// partitionOf returns rep's partition, from the catalog when the replica does not know it.
func (s *tieredLog) partitionOf(rep *Replica) *cluster.PartitionInfo {
	if rep.Partition != nil || rep.Bucket.PartitionID == cluster.NoPartition {
		return rep.Partition
	}
	p, _ := s.opts.Catalog.PartitionByID(rep.Bucket.PartitionID)
	return p
}

// logStart is the bucket's log start as clients see it: the remote log start when part of
// the log is tiered (Fluss LogTablet.logStartOffset), else the local one.
func (s *tieredLog) logStart(rep *Replica) int64 {
	local := rep.Log.LogStartOffset()
	if s.opts.RemoteLog == nil {
		return local
	}
	if start, ok := s.opts.RemoteLog.LogStartOffset(context.Background(), rep.Table, s.partitionOf(rep), rep.Bucket); ok && start < local {
		return start
	}
	return local
}

// remoteFetchInfo returns where offset lives in the remote log when it is below the local
// log start, or nil.
func (s *tieredLog) remoteFetchInfo(rep *Replica, offset int64) *flusspb.PbRemoteLogFetchInfo {
	if s.opts.RemoteLog == nil || offset >= rep.Log.LogStartOffset() {
		return nil
	}
	return s.opts.RemoteLog.FetchInfo(context.Background(), rep.Table, s.partitionOf(rep), rep.Bucket, offset)
}

// remoteOffsetForTimestamp improves a local timestamp lookup that answered the local log
// start: earlier records with timestamps >= ts may be in the remote log.
func (s *tieredLog) remoteOffsetForTimestamp(rep *Replica, local, ts int64) int64 {
	if s.opts.RemoteLog == nil || local > rep.Log.LogStartOffset() {
		return local
	}
	if off, ok := s.opts.RemoteLog.OffsetForTimestamp(context.Background(), rep.Table, s.partitionOf(rep), rep.Bucket, ts); ok && off < local {
		return off
	}
	return local
}
