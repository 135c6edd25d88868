package remotelog

import (
	"context"
	"encoding/binary"
	"io"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/cluster"
)

// maxFetchSegments caps the segments one FETCH_LOG answer names. Fluss names every segment
// from the fetch offset on; a client reads them in order and fetches again from where they
// end, so a cap changes nothing but the answer's size.
const maxFetchSegments = 64

// firstLoadTimeout bounds what a reader fetches from the stores: a bucket's committed record and
// manifest on first use, a segment's index.
const firstLoadTimeout = 5 * time.Second

// committed returns b's committed view, loading it on first use (a fetch that arrives
// before the first pass, e.g. right after a restart). Nil when it cannot be read.
func (m *Manager) committed(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket) *view {
	st := m.state(b)
	if v := st.v.Load(); v != nil {
		return v
	}
	st.loadMu.Lock()
	defer st.loadMu.Unlock()
	if v := st.v.Load(); v != nil {
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, firstLoadTimeout)
	defer cancel()
	v, err := m.loadLocked(ctx, t, p, b, st, nil)
	if err != nil {
		m.log.Debug("remote log: load committed manifest", "bucket", b, "err", err)
		return nil
	}
	return v
}

// LogStartOffset returns the first offset of b's remote log, if it has one.
func (m *Manager) LogStartOffset(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket) (int64, bool) {
	v := m.committed(ctx, t, p, b)
	if v == nil || v.man == nil || len(v.man.Segments) == 0 {
		return 0, false
	}
	return v.man.StartOffset(), true
}

// Stats returns b's remote log start and end offsets and size as last seen (no load).
func (m *Manager) Stats(b cluster.Bucket) (start, end, size int64, ok bool) {
	m.mu.Lock()
	st := m.buckets[b]
	m.mu.Unlock()
	if st == nil {
		return 0, 0, 0, false
	}
	v := st.v.Load()
	if v == nil || v.man == nil || len(v.man.Segments) == 0 {
		return 0, 0, 0, false
	}
	return v.man.StartOffset(), v.man.EndOffset(), v.man.Size(), true
}

// FetchInfo answers a fetch of b at offset from the remote log, as Fluss's ReplicaManager
// does for an offset below the local log start: the bucket's remote directory, the
// segments from the one holding offset on, and the byte position in the first one of the
// last indexed batch at or before offset. Nil when offset is not in the remote log.
func (m *Manager) FetchInfo(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket, offset int64) *flusspb.PbRemoteLogFetchInfo {
	v := m.committed(ctx, t, p, b)
	if v == nil || v.man == nil || len(v.man.Segments) == 0 {
		return nil
	}
	segs := v.man.Segments
	if offset < segs[0].StartOffset || offset >= segs[len(segs)-1].EndOffset {
		return nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].EndOffset > offset })
	if offset < segs[i].StartOffset {
		return nil // a gap (the local log was cut by retention before it was tiered)
	}
	info := &flusspb.PbRemoteLogFetchInfo{RemoteLogTabletDir: proto.String(m.opts.Storage.ClientPath(v.dir))}
	if v.part != "" {
		info.PartitionName = proto.String(v.part)
	}
	for j, s := range segs[i:min(len(segs), i+maxFetchSegments)] {
		if j > 0 && s.StartOffset != segs[i+j-1].EndOffset {
			break // clients read a later segment from its start: only contiguous ones, or they would read offsets twice
		}
		info.RemoteLogSegments = append(info.RemoteLogSegments, &flusspb.PbRemoteLogSegment{
			RemoteLogSegmentId: proto.String(s.ID), RemoteLogStartOffset: proto.Int64(s.StartOffset),
			RemoteLogEndOffset: proto.Int64(s.EndOffset), SegmentSizeInBytes: proto.Int32(s.SizeInBytes),
			MaxTimestamp: proto.Int64(s.MaxTimestamp)})
	}
	info.FirstStartPos = proto.Int32(m.position(ctx, v.dir, segs[i], offset))
	return info
}

// position looks offset up in the remote offset index of s: the byte position of the last
// indexed batch starting at or before offset (0 when the index cannot be read: the client
// then skips the records before offset itself).
func (m *Manager) position(ctx context.Context, dir string, s Segment, offset int64) int32 {
	if offset <= s.StartOffset {
		return 0
	}
	idx, ok := m.idx.get(s.ID)
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, firstLoadTimeout)
		defer cancel()
		rc, err := m.opts.Storage.Bucket.Get(ctx, segmentKey(dir, s.ID, s.StartOffset, ".index"))
		if err != nil {
			return 0
		}
		idx, err = io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if err != nil {
			return 0
		}
		m.idx.put(s.ID, idx)
	}
	// Entries of 8 bytes {relative offset, position}, little-endian, strictly increasing
	// (server/logstore/doc.go).
	n := len(idx) / 8
	rel := uint32(offset - s.StartOffset)
	j := sort.Search(n, func(j int) bool { return binary.LittleEndian.Uint32(idx[j*8:]) > rel })
	if j == 0 {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(idx[(j-1)*8+4:]))
}

// indexCache keeps remote offset indexes, at most max bytes, evicting the oldest.
type indexCache struct {
	mu    sync.Mutex
	max   int
	bytes int
	m     map[string][]byte
	order []string
}

func (c *indexCache) get(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[id]
	return b, ok
}

func (c *indexCache) put(id string, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	if _, ok := c.m[id]; ok || len(b) > c.max {
		return
	}
	for c.bytes+len(b) > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old])
		delete(c.m, old)
	}
	c.m[id] = b
	c.order = append(c.order, id)
	c.bytes += len(b)
}

// OffsetForTimestamp returns an offset of b's remote log from which every record with a
// commit timestamp >= ts is read: the start of the last time-indexed batch of the first
// remote segment reaching ts whose timestamp is below ts (Fluss looks up the exact batch in
// the remote time index and segment; this answer can be a few batches earlier, never later).
// False when no remote segment reaches ts.
func (m *Manager) OffsetForTimestamp(ctx context.Context, t *cluster.TableInfo, p *cluster.PartitionInfo, b cluster.Bucket, ts int64) (int64, bool) {
	v := m.committed(ctx, t, p, b)
	if v == nil || v.man == nil {
		return 0, false
	}
	for _, s := range v.man.Segments {
		if s.MaxTimestamp < ts {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, firstLoadTimeout)
		defer cancel()
		rc, err := m.opts.Storage.Bucket.Get(ctx, segmentKey(v.dir, s.ID, s.StartOffset, ".timeindex"))
		if err != nil {
			return s.StartOffset, true
		}
		idx, err := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if err != nil {
			return s.StartOffset, true
		}
		// Entries of 12 bytes {commit timestamp int64, relative offset uint32}, little-endian,
		// increasing; every batch before an entry has a timestamp <= the entry's.
		off := s.StartOffset
		for i := 0; i+12 <= len(idx); i += 12 {
			if int64(binary.LittleEndian.Uint64(idx[i:])) >= ts {
				break
			}
			off = s.StartOffset + int64(binary.LittleEndian.Uint32(idx[i+8:]))
		}
		return off, true
	}
	return 0, false
}
