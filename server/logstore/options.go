package logstore

import (
	"log/slog"
	"math"
	"time"

	"github.com/stromdb/strom/server/journal"
)

// Defaults, named after the Fluss options they mirror.
const (
	// DefaultSegmentBytes is Fluss `log.segment.file-size` (1024m).
	DefaultSegmentBytes = 1 << 30
	// DefaultIndexIntervalBytes is Fluss `log.index.interval-size` (4k).
	DefaultIndexIntervalBytes = 4 << 10
	// DefaultIndexMaxBytes is Fluss `log.index.file-size` (10m): the largest index file of a
	// segment; a segment rolls when either of its indexes would grow past it.
	DefaultIndexMaxBytes = 10 << 20
	// DefaultWriterExpiration is Fluss `server.writer-id.expiration-time` (7 days).
	DefaultWriterExpiration = 7 * 24 * time.Hour
)

// maxSegmentBytes bounds SegmentBytes so that every position fits the uint32 fields of the
// offset index even when one append overshoots the limit (an append never spans segments).
const maxSegmentBytes = math.MaxInt32

type flushKind uint8

const (
	flushDefault flushKind = iota
	flushEveryAppend
	flushInterval
)

// FlushPolicy says when appended bytes are forced to stable storage (fdatasync). It decides
// what an acknowledged append survives; see the package documentation.
type FlushPolicy struct {
	kind     flushKind
	interval time.Duration
}

// FlushEveryAppend makes Append return only after its bytes are fdatasync'ed; concurrent
// appends to the same Log share one fdatasync (group commit). Acknowledged data survives
// power loss. This is the default.
var FlushEveryAppend = FlushPolicy{kind: flushEveryAppend}

// FlushInterval makes Append return as soon as its bytes are written to the page cache; a
// background goroutine fdatasyncs the active segment every d (d <= 0: only at segment roll
// and Close). Acknowledged data survives kill -9 but up to d of it may be lost on power loss.
func FlushInterval(d time.Duration) FlushPolicy {
	return FlushPolicy{kind: flushInterval, interval: d}
}

// String describes the policy.
func (p FlushPolicy) String() string {
	switch p.kind {
	case flushInterval:
		if p.interval <= 0 {
			return "flush-on-roll"
		}
		return "flush-interval-" + p.interval.String()
	default:
		return "flush-every-append"
	}
}

func (p FlushPolicy) everyAppend() bool { return p.kind != flushInterval }

// Options configure a Log. The zero value is valid and means the defaults.
type Options struct {
	// SegmentBytes is the size at which the active segment is rolled (default 1 GiB, capped at
	// 2 GiB-1). An append never spans segments, so a segment can exceed it by one append.
	SegmentBytes int64
	// IndexIntervalBytes is the number of log bytes between two index entries (default 4 KiB).
	IndexIntervalBytes int
	// IndexMaxBytes bounds each index file (default 10 MiB); a full index rolls the segment.
	IndexMaxBytes int
	// FlushPolicy defaults to FlushEveryAppend.
	FlushPolicy FlushPolicy
	// WriterExpiration is how long a writer id's state is kept after its last batch
	// (default 7 days).
	WriterExpiration time.Duration
	// TTL is `table.log.ttl`: inactive segments whose newest commit timestamp is older than
	// TTL are deleted by DeleteExpiredSegments. Zero or negative keeps everything.
	TTL time.Duration
	// Logger receives recovery warnings; nil means slog.Default().
	Logger *slog.Logger
	// OnOffline, when set, is called once when a running log goes offline for a corrupt batch
	// (found by a read or the scrubber; after the marker is written) or for a media error (EIO
	// on a write or sync of a segment file, media.go), so that the owner can
	// start a repair at once (docs/durability.md, "The scrubber"). It must not block and must
	// not call back into the log. A log that opens offline (its marker) does not call it:
	// check Offline after Open.
	OnOffline func()
	// ExternalHighWatermark is the replicated mode: the high watermark no longer follows the
	// local fsync but is set by the replica manager with SetHighWatermark (monotonic, clamped
	// to DurableLogEndOffset), persisted lazily in a checkpoint file and restored at Open.
	// The zero value keeps the single-node behaviour.
	ExternalHighWatermark bool
	// Now is the clock used on Open (writer expiry) and by the flusher; nil means time.Now.
	Now func() time.Time
	// InitialOffset is the base offset of the first segment when Open finds no segment (a
	// new log): a follower whose leader's log no longer starts at 0 begins where the leader's
	// begins (Kafka's truncateFullyAndStartAt). Ignored for an existing log.
	InitialOffset int64
	// Journal, when set (and the flush policy is FlushEveryAppend), is the server-wide
	// group-commit journal: appends of at most JournalMaxBytes are acknowledged once they
	// are fdatasync'ed in it, their segment bytes synced by its checkpoint; larger ones keep
	// the segment's own fdatasync (docs/durability.md, "The journal"). The log must live
	// inside the journal's data directory.
	Journal *journal.Journal
	// JournalMaxBytes is the largest append (bytes of all its batches) that goes through the
	// journal; 0 means DefaultJournalMaxBytes.
	JournalMaxBytes int64
	// JournalMinInFlight is the fewest fsync-per-ack appends in flight server-wide (the
	// append included) for a small append to go through the journal; 0 means
	// DefaultJournalMinInFlight.
	JournalMinInFlight int

	// journalCovers reports, during Open, whether the bucket's journal_replay file holds the
	// batch at an offset: recovery then cuts a damaged active-segment tail there instead of
	// declaring it corrupt. Set by Open.
	journalCovers func(off int64) bool
}

func (o Options) withDefaults() Options {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentBytes > maxSegmentBytes {
		o.SegmentBytes = maxSegmentBytes
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.IndexMaxBytes <= 0 {
		o.IndexMaxBytes = DefaultIndexMaxBytes
	}
	if o.IndexMaxBytes < timeEntrySize {
		o.IndexMaxBytes = timeEntrySize
	}
	if o.FlushPolicy.kind == flushDefault {
		o.FlushPolicy = FlushEveryAppend
	}
	if o.WriterExpiration <= 0 {
		o.WriterExpiration = DefaultWriterExpiration
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
