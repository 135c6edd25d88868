package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// Leader epochs (Kafka's leader-epoch cache, KIP-101/KIP-279). Fluss reserves a LeaderEpoch
// field in the V2 batch header ("used to build a consistent leaderEpoch cache across
// tabletServers", fluss-common/.../record/LogRecordBatchFormat.java) but keeps no such cache
// yet; Strom keeps one per log so that a replica that rejoins truncates exactly the part of
// its log that diverged from the leader's.

// NoEpoch is the undefined epoch, and NoEpochOffset the undefined end offset, that
// EndOffsetForEpoch answers when the log knows nothing about the requested epoch (Kafka's
// UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET).
const (
	NoEpoch       int32 = -1
	NoEpochOffset int64 = -1
)

// epochFileName is the leader-epoch checkpoint in the bucket directory.
const epochFileName = "leader_epoch_checkpoint"

// Leader-epoch checkpoint layout (little-endian):
//
//	magic "SLE1" | crc32c uint32 over everything after it | count uint32
//	count × {epoch int32 | start offset int64}
const (
	epochMagic      = "SLE1"
	epochHeaderSize = 12
	epochEntrySize  = 12
)

// EpochEntry says that the leader of epoch Epoch appended its first batch at StartOffset:
// every batch in [StartOffset, the next entry's StartOffset) was written by that leader.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the ordered list of entries: epochs strictly increasing, start offsets
// non-decreasing. It is guarded by Log.mu.
type epochCache struct {
	entries []EpochEntry
}

// latestEpoch returns the newest epoch; ok is false when the cache is empty (a single-node
// log, whose appends are then left exactly as before).
func (c *epochCache) latestEpoch() (int32, bool) {
	if len(c.entries) == 0 {
		return NoEpoch, false
	}
	return c.entries[len(c.entries)-1].Epoch, true
}

// assign adds (epoch, start), removing entries that conflict with it (a larger-or-equal
// epoch, or a start offset at or after start: epochs that never appended anything here).
// It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if last.Epoch == epoch && last.StartOffset <= start {
			return false // the epoch started earlier already
		}
	}
	i := len(c.entries)
	for i > 0 && (c.entries[i-1].Epoch >= epoch || c.entries[i-1].StartOffset >= start) {
		i--
	}
	c.entries = append(c.entries[:i:i], EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// truncateFromEnd removes the entries starting at or after end (Kafka truncateFromEnd). It
// reports whether the cache changed.
func (c *epochCache) truncateFromEnd(end int64) bool {
	i := len(c.entries)
	for i > 0 && c.entries[i-1].StartOffset >= end {
		i--
	}
	if i == len(c.entries) {
		return false
	}
	c.entries = c.entries[:i:i]
	return true
}

// endOffsetFor implements Kafka's LeaderEpochFileCache.endOffsetFor: for the latest epoch,
// the log end; for an older epoch the start offset of the first later epoch, together with
// the largest epoch <= the requested one (or the requested epoch when it is older than
// every entry); NoEpoch/NoEpochOffset when the epoch is newer than every entry, undefined,
// or the cache is empty.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	n := len(c.entries)
	if epoch == NoEpoch || n == 0 {
		return NoEpoch, NoEpochOffset
	}
	if c.entries[n-1].Epoch == epoch {
		return epoch, leo
	}
	// higher: first entry with Epoch > epoch.
	h := 0
	for h < n && c.entries[h].Epoch <= epoch {
		h++
	}
	if h == n {
		return NoEpoch, NoEpochOffset
	}
	if h == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[h-1].Epoch, c.entries[h].StartOffset
}

func encodeEpochs(entries []EpochEntry) []byte {
	b := make([]byte, epochHeaderSize, epochHeaderSize+len(entries)*epochEntrySize)
	copy(b, epochMagic)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	binary.LittleEndian.PutUint32(b[4:], record.Checksum(b[8:]))
	return b
}

var errBadEpochFile = errors.New("logstore: malformed leader-epoch checkpoint")

func decodeEpochs(b []byte) ([]EpochEntry, error) {
	if len(b) < epochHeaderSize || string(b[:4]) != epochMagic {
		return nil, errBadEpochFile
	}
	if binary.LittleEndian.Uint32(b[4:]) != record.Checksum(b[8:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadEpochFile)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	if uint64(len(b)-epochHeaderSize) != uint64(n)*epochEntrySize {
		return nil, errBadEpochFile
	}
	out := make([]EpochEntry, n)
	p := b[epochHeaderSize:]
	for i := range out {
		out[i] = EpochEntry{
			Epoch:       int32(binary.LittleEndian.Uint32(p)),
			StartOffset: int64(binary.LittleEndian.Uint64(p[4:])),
		}
		p = p[epochEntrySize:]
		if out[i].Epoch < 0 || out[i].StartOffset < 0 ||
			i > 0 && (out[i].Epoch <= out[i-1].Epoch || out[i].StartOffset < out[i-1].StartOffset) {
			return nil, errBadEpochFile
		}
	}
	return out, nil
}

// loadEpochs reads the checkpoint (a missing or unreadable one means an empty cache: the
// epochs are then learnt again from the leader) and drops entries beyond the recovered log
// end. Caller owns l exclusively.
func (r *Replica) loadEpochs() {
	l := r.log
	b, err := os.ReadFile(filepath.Join(l.dir, epochFileName))
	if err != nil {
		if !os.IsNotExist(err) {
			l.opts.Logger.Warn("logstore: leader-epoch checkpoint unreadable", "dir", l.dir, "err", err)
		}
		return
	}
	entries, err := decodeEpochs(b)
	if err != nil {
		l.opts.Logger.Warn("logstore: leader-epoch checkpoint ignored", "dir", l.dir, "err", err)
		return
	}
	r.epochs.entries = entries
	// An entry at exactly the log end is an epoch that started but appended nothing yet.
	if r.epochs.truncateFromEnd(l.leo + 1) {
		_ = r.persistEpochsLocked()
	}
}

// persistEpochsLocked writes the cache atomically. Caller holds mu.
func (r *Replica) persistEpochsLocked() error {
	l := r.log
	if err := writeFileAtomic(filepath.Join(l.dir, epochFileName), encodeEpochs(r.epochs.entries)); err != nil {
		return fmt.Errorf("%w: %w", ferr.New(ferr.LogStorageException, "leader-epoch checkpoint"), err)
	}
	return syncDir(l.dir)
}

// AssignEpoch records that the leader of epoch starts writing at startOffset. A replica
// manager calls it when this replica becomes leader (startOffset = LogEndOffset), before the
// first append of the epoch; from then on Append stamps the epoch into every V2 batch. A
// follower calls it for epoch boundaries it learns from the leader when the fetched batches
// do not carry an epoch (V0/V1). An epoch older than the latest is refused
// (FENCED_LEADER_EPOCH_EXCEPTION); re-assigning the latest epoch is a no-op; an entry is
// persisted (leader-epoch checkpoint, atomically) before AssignEpoch returns.
func (r *Replica) AssignEpoch(epoch int32, startOffset int64) error {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if epoch < 0 {
		return ferr.New(ferr.FencedLeaderEpochException, "invalid leader epoch %d", epoch)
	}
	if latest, ok := r.epochs.latestEpoch(); ok && epoch < latest {
		return ferr.New(ferr.FencedLeaderEpochException,
			"leader epoch %d is older than the log's latest epoch %d", epoch, latest)
	}
	if startOffset < 0 || startOffset > l.leo {
		return ferr.New(ferr.LogOffsetOutOfRangeException,
			"epoch %d start offset %d is beyond the log end %d", epoch, startOffset, l.leo)
	}
	if !r.epochs.assign(epoch, startOffset) {
		return nil
	}
	return r.persistEpochsLocked()
}

// LatestEpoch returns the newest leader epoch of the log, or NoEpoch.
func (r *Replica) LatestEpoch() int32 {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	e, _ := r.epochs.latestEpoch()
	return e
}

// EpochEntries returns a copy of the leader-epoch cache, oldest first.
func (r *Replica) EpochEntries() []EpochEntry {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]EpochEntry(nil), r.epochs.entries...)
}

// EndOffsetForEpoch answers a follower's OffsetsForLeaderEpoch question with Kafka's
// semantics: for the latest epoch, (epoch, log end offset); for an older one, the largest
// epoch <= it that this log knows and the start offset of the first epoch after it (the end
// of the requested epoch here); (NoEpoch, NoEpochOffset) for an undefined epoch, one newer
// than every epoch of this log, or an empty cache.
func (r *Replica) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	return r.epochs.endOffsetFor(epoch, l.leo)
}

// TruncationOffset is the follower's side of the epoch protocol (Kafka
// ReplicaFetcherThread.getOffsetTruncationState). Given the leader's answer (leaderEpoch,
// leaderEnd) to EndOffsetForEpoch(this log's LatestEpoch), it returns the offset this log
// must be truncated to and whether that is final. When the leader does not know the epoch
// (NoEpochOffset), or this log knows nothing of the leader's epoch, it falls back to the high
// watermark. When this log does not have the leader's epoch, the answer is not final: ask
// the leader again about the epoch this log holds there (EndOffsetForEpoch(the returned
// offset's epoch)) after truncating.
func (r *Replica) TruncationOffset(leaderEpoch int32, leaderEnd int64) (offset int64, final bool) {
	l := r.log
	l.mu.Lock()
	defer l.mu.Unlock()
	hw := l.v.Load().hw
	if leaderEnd == NoEpochOffset {
		return hw, true
	}
	if leaderEpoch == NoEpoch {
		return min(leaderEnd, l.leo), true
	}
	e, end := r.epochs.endOffsetFor(leaderEpoch, l.leo)
	if e == NoEpoch {
		return hw, true
	}
	return min(leaderEnd, end, l.leo), e == leaderEpoch
}

// setLeaderEpoch stamps epoch into a V2 batch's LeaderEpoch field, which lies before the CRC
// (fluss-common/.../record/LogRecordBatchFormat.java), so the stored CRC stays valid. V0 and
// V1 batches have no such field and are left alone.
func setLeaderEpoch(b record.Batch, epoch int32) {
	if b.Magic() == record.MagicV2 {
		binary.LittleEndian.PutUint32(b[21:], uint32(epoch))
	}
}
