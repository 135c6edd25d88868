// Package logstore is the durable, segmented log of one table bucket: the storage under
// PRODUCE_LOG, FETCH_LOG, LIST_OFFSETS and LIMIT_SCAN of log tables, and the changelog of
// primary-key tables. It follows the contract of Fluss's LogTablet/LocalLog/LogSegment
// (fluss-server/.../server/log) with file formats of its own.
//
// # Batches
//
// Batches are stored exactly as received. Append patches only BaseOffset and CommitTimestamp,
// which lie outside the CRC, so the stored CRC stays valid and reads forward the bytes without
// decoding. Offsets: the first batch of an append gets the log end offset (LEO), each next
// batch the previous batch's last offset + 1; an empty batch (RecordCount 0) still takes one
// offset. All batches of one append get the same commit timestamp, max(largest commit
// timestamp so far, now), so commit timestamps never decrease along the log. Timestamp lookup
// relies on that invariant.
//
// # Directory layout
//
// One directory per bucket. For each segment, named by its base offset as 20 zero-padded
// decimal digits:
//
//	00000000000000000000.log        batches back to back, byte-identical to the wire format
//	00000000000000000000.index      sparse offset index (sealed segments, and after Close)
//	00000000000000000000.timeindex  sparse time index (same)
//	00000000000000001234.writer_snapshot  idempotent-writer state valid at offset 1234
//	clean_shutdown                   present only between a clean Close and the next Open
//
// Files ending in .tmp are incomplete atomic writes and are deleted on Open, as are index
// files without a log file.
//
// Offset index: a sequence of 8-byte entries, each {relative offset uint32 LE, position
// uint32 LE}: the batch starting at byte `position` of the .log file has base offset
// segment base + relative offset. Entries are strictly increasing in both fields; the first
// batch of a segment (position 0) has no entry, it is implicit. An entry is added for the
// first batch that starts after at least Options.IndexIntervalBytes bytes since the previous
// entry (4 KiB by default, Fluss `log.index.interval-size`).
//
// Time index: a sequence of 12-byte entries {commit timestamp int64 LE, relative offset
// uint32 LE}, added together with an offset entry whenever the batch's commit timestamp is
// larger than the previous time entry's. Each entry's relative offset also has an offset
// entry. Because timestamps are non-decreasing, every batch before an entry has a timestamp
// <= the entry's, which is all the lookup needs.
//
// Neither index is checksummed: both can always be rebuilt from the .log file. The active
// segment keeps its indexes in memory only; they are written (temporary file, fdatasync,
// rename) when the segment is sealed at roll, and at Close. Sealed indexes are memory-mapped
// read-only.
//
// Writer snapshot: little-endian
//
//	magic "SWS1" | crc32c uint32 over everything after it | offset int64 | writer count uint32
//	per writer: writer id int64 | last commit timestamp int64 | n uint8 (<= 5)
//	            n × {batch sequence int32 | first offset int64 | last offset int64 | commit ts int64}
//
// It describes the state after every batch with base offset < offset. One is written at each
// roll (offset = the new segment's base) and at Close (offset = LEO); the two newest are kept
// and older ones below the log start offset are deleted.
//
// # Rolling
//
// Before an append, the active segment is rolled when it is non-empty and the append would
// take it past Options.SegmentBytes (1 GiB, Fluss `log.segment.file-size`), when either index
// would exceed Options.IndexMaxBytes (10 MiB, `log.index.file-size`), or when an offset would
// not fit the relative form. An append never spans segments, so a segment may exceed
// SegmentBytes by one append. Rolling fdatasyncs the old segment, seals its indexes, writes a
// writer snapshot, creates the new segment file and fsyncs the directory.
//
// # Recovery (Open)
//
// Sealed segments were fdatasync'ed before the roll that sealed them, so they are trusted
// after a cheap check: the index files must have whole entries, the last entries must be in
// bounds and ordered, and walking the batch headers from the last index entry must reach the
// exact end of the file with contiguous offsets. If that fails the segment is re-read in full
// as below and its indexes rewritten.
//
// The active segment is re-read in full unless the previous shutdown was clean (the
// clean_shutdown marker, removed and fsync'ed away before anything else happens): every batch
// must have a plausible length within the file, pass record.Batch.Validate (shape and CRC-32C)
// and carry the base offset that follows its predecessor. At the first batch that fails, the
// rest of the file is scanned for a valid batch (plausible length and magic, base offset at
// least the expected one, valid CRC). If there is none, the bad bytes are a torn tail — the
// incomplete last write — and the file is truncated there; the indexes are rebuilt in
// memory. If there is one, or the bad batch is in a sealed segment (synced before the roll, so
// never torn by our writes), it is corruption: nothing is truncated or deleted, loading stops
// at that segment and the log opens offline (see below). The recovered data is fdatasync'ed and
// the high watermark is set to the new LEO. Writer state comes from the newest readable
// snapshot at or below the LEO, then the batch headers after it are replayed (normally only
// part of the active segment; without any snapshot the whole log's headers are walked), and
// writers idle for longer than Options.WriterExpiration are dropped.
//
// # Corruption and offline logs
//
// Read verifies every byte range it returns once per opening of the segment (length, CRC,
// contiguous offsets; segment.verify), remembering verified ranges per segment; appended and
// recovered bytes count as verified. A bad batch, found by recovery or by a read, takes the log
// offline (Offline): appends, reads, timestamp lookups and waits get LOG_STORAGE_EXCEPTION
// naming the segment file and position, one ERROR line names the full path and the repair, a
// "corrupt" marker file (segment file name and position) keeps the log offline across
// restarts, Close writes no clean marker and retention deletes nothing. Only the operator's
// AcceptTruncation (strom repair-log) cuts the log at the bad batch; it leaves an
// "operator_truncated" marker (OperatorTruncation) so that state derived from the log is
// rebuilt.
//
// # Durability
//
// Reads only ever see data below the high watermark (HW); single node, so the HW is the LEO
// once the append is durable in the sense of the flush policy.
//
// FlushEveryAppend (default): Append writes with pwrite(2), then waits for an fdatasync(2)
// of the active segment, and only then advances the HW and returns. Appends that arrive while
// a sync runs are covered together by the next one (group commit per bucket). Different
// buckets sync their own files; on journaling file systems concurrent fdatasyncs usually
// share a journal commit, but nothing here batches them explicitly. A kill -9 loses
// nothing acknowledged; a power loss loses nothing acknowledged. A crash can leave a written
// but unacknowledged tail; recovery keeps it if it is whole and valid (the client then sees
// its retry as a duplicate, thanks to writer state) and cuts it otherwise.
//
// FlushInterval(d): Append writes with pwrite(2), advances the HW and returns; a background
// goroutine fdatasyncs every d, and a roll or Close always syncs. A kill -9 loses nothing
// acknowledged (the bytes are in the page cache, which outlives the process). A power loss
// or kernel crash loses what was acknowledged in the last d (for d <= 0, everything since the
// last roll or Close), and recovery cuts the tail at the first torn or corrupt batch.
//
// Journal (Options.Journal, FlushEveryAppend only): an append of at most JournalMaxBytes,
// made while at least JournalMinInFlight appends are in flight server-wide, is enqueued in
// the server-wide journal (server/journal) after its pwrite and acknowledged once the
// journal's group fdatasync covers it and every earlier segment-path append of the log is
// synced (synced then means durable: in the segment or in the journal). The journal's
// checkpoint fdatasyncs the segment later. Open replays the bucket's journal_replay file
// (the journal's surviving records, handed over at server start) after recovery: a bad
// batch in the active segment at an offset that file holds is cut as a torn tail even when
// valid batches follow (holes of an unsynced tail after a power loss), and the file's
// batches from the LEO on are appended, fdatasync'ed and the file removed. TruncateTo and
// Truncate first void the journal's records at and above the cut (durably); Close voids
// all of them; a new log waits for pending voids.
//
// Index files and writer snapshots are never needed for correctness: both are rebuilt from
// the log when missing or damaged.
//
// # Types
//
// Log is the bucket's log: appends, reads, offsets, corruption and lifecycle. Its other
// concerns are types of their own, each owning its state and documented with its locks:
// Replica (replication, below), Retention (TTL and floors, deletion by age), Tiering (what
// server/remotelog copies and deletes), BatchStats (the statistics sidecars), and inside the
// package syncer (group commit and the flusher) and appender (placing batches, rolling).
//
// # Concurrency
//
// A Log is safe for one writer and many concurrent readers (several writers are serialised).
//
//   - Log.mu is the writer lock, held by Append (validation, offset assignment, writer-state
//     check, write, index update), roll, retention, Truncate and Close.
//   - The group commit's lock (syncer.mu) serialises fdatasync and keeps Truncate, TruncateTo
//     and Close out of a sync in progress. Lock order: syncer.mu before Log.mu. Append does
//     not hold mu while it waits for the sync.
//   - Readers never take Log.mu. They load an immutable view (segment list, log start, LEO,
//     HW and the byte position of the HW) through an atomic pointer, replaced on every change.
//     Bytes below the HW are never rewritten, so readers need no lock for the data; a
//     segment's in-memory index and bookkeeping are behind its own RWMutex.
//   - Each segment is reference-counted; a Read takes a reference that its ReadResult holds
//     until Release, so retention (which unlinks files at once) never closes a descriptor a
//     reader still uses. Truncate is the exception: it must not race readers holding ranges
//     above the new end.
//   - Long polling: Changed returns a channel closed at the next view change, Wait blocks
//     until the HW passes an offset.
//
// An I/O error while writing, syncing or rolling makes the Log refuse further appends
// (LOG_STORAGE_EXCEPTION) until it is reopened, which re-runs recovery. Only one Log may have
// a directory open at a time; nothing here locks the directory against a second process.
//
// # Replication
//
// These primitives, the methods of Replica (Log.Replica), are what the tablet server's
// replica manager (server/tablet) drives; a log opened without Options.ExternalHighWatermark never touches any of the files below and
// behaves exactly as described above.
//
//   - Replicated mode (Options.ExternalHighWatermark): appends move the LEO only. The HW is
//     set from outside with SetHighWatermark: monotonic, clamped to DurableLogEndOffset (the
//     fdatasync'ed end under FlushEveryAppend, the LEO under FlushInterval) and rounded down
//     to a batch boundary. Invariant: HW <= durable end <= LEO.
//   - AppendAsFollower stores batches read from the leader (ReadReplica, bounded by the LEO)
//     unchanged; they must start at the LEO, be contiguous, valid and with non-decreasing
//     commit timestamps. Writer state is updated with the same observe step recovery uses.
//     Under FlushEveryAppend it returns after the fsync.
//   - Leader epochs: an ordered list {epoch, start offset} (epochs strictly increasing,
//     offsets non-decreasing). AssignEpoch adds an entry (the new leader, at its LEO); while
//     the list is non-empty, Append stamps the latest epoch into V2 batches (outside the CRC);
//     AppendAsFollower starts an epoch at the first V2 batch carrying a newer one.
//     EndOffsetForEpoch and TruncationOffset follow Kafka (KIP-101/279).
//   - TruncateTo(offset) cuts every batch at or above offset (rounded down to a batch base),
//     refusing to go below SetTruncateFloor's floor or the log start. Order: intent file
//     (durable) → later segments removed newest first → the target segment cut and its
//     indexes rebuilt (fdatasync) → epochs trimmed → writer state rebuilt → HW =
//     min(HW, LEO) → HW checkpoint → intent removed. Open redoes a truncation whose intent it
//     finds, so a crash leaves the old log (before the intent) or the new one.
//
// Files (replicated mode; little-endian, each written to a .tmp file, fdatasync'ed, renamed,
// directory fsync'ed):
//
//	high_watermark_checkpoint  "SHW1" | crc32c uint32 over the rest | hw int64
//	leader_epoch_checkpoint    "SLE1" | crc32c uint32 over the rest | count uint32 |
//	                           count × {epoch int32 | start offset int64}
//	truncate_intent            "STI1" | crc32c uint32 over the rest | offset int64
//
// The HW checkpoint is written at each roll, at Close, after TruncateTo and by
// CheckpointHighWatermark (call it periodically); at Open the HW is restored clamped to
// [log start, recovered LEO]. A missing or corrupt HW or epoch checkpoint means 0 / an empty
// cache (the leader supplies both again); a corrupt intent fails Open. The epoch checkpoint is
// rewritten on every change (epoch changes and truncations are rare); entries starting past
// the recovered LEO are dropped at Open.
//
// Periodic work is the caller's: call Retention.DeleteExpiredSegments (Fluss checks every
// `log.retention.check-interval`, 5 min), which also expires idle writers.
package logstore
