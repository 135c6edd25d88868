// Package journal is the server-wide group-commit journal for small fsync-before-ack appends
// (docs/durability.md, "The journal"): every journaled batch of every bucket goes into one
// append-only file, and one fdatasync covers every record that arrived while the previous
// one ran, whatever the number of buckets. The bucket segments receive the same bytes
// without a sync; a background checkpoint syncs them and records the journal position below
// which everything is in synced segments, and journal files wholly below it are deleted.
//
// # Files
//
// The journal lives in ROOT/journal, ROOT being the server's data directory:
//
//	00000000000000000000.jnl   records back to back; the name is the position of its first byte
//	checkpoint                 "SJC1" | crc32c uint32 over the rest | position int64
//
// Positions count bytes over the whole journal, across files. A file is rotated (a new one
// started at the next position) once it holds at least Options.FileBytes, always between two
// groups, so every file but the last was fdatasync'ed whole before the next one got a byte.
//
// A record (little-endian):
//
//	length uint32 (bytes after this field) | crc32c uint32 over the bytes after it |
//	kind uint8 | key length uint16 | key | base offset int64 | data
//
// kind 1 is a batch (data: the batch exactly as stored in the segment, base offset its first
// offset); kind 2 voids the key's earlier records at or above the base offset (written,
// and synced, before a log is truncated, or with base math.MinInt64 when it is closed: its
// segment is synced and a later directory of the same name must not inherit its records).
// The key is the bucket directory relative to ROOT.
//
// # Recovery
//
// Open reads every file from the checkpoint on. A record that fails its length or CRC in
// the last file is the torn tail of the last group, never acknowledged: the file is cut
// there. In an earlier file it is corruption and Open fails. The surviving records of each
// key, voids applied, are written to the key's directory as ROOT/KEY/journal_replay (same
// record format, key empty; merged with one left by an earlier Open), synced, and the journal
// then starts empty: the log store replays that file into the segments when it opens the
// bucket (server/logstore, doc.go), whenever that is. A key whose directory no longer exists
// (a dropped bucket) is discarded.
package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stromdb/strom/internal/faultfs"
)

// Defaults.
const (
	// DefaultFileBytes is the size at which a journal file is rotated.
	DefaultFileBytes = 64 << 20
	// DefaultCheckpointInterval is how often the checkpoint syncs segments and truncates.
	DefaultCheckpointInterval = time.Second
	// ReplayFile is the per-bucket file Open leaves for the log store to replay.
	ReplayFile = "journal_replay"
)

const (
	kindBatch = 1
	kindVoid  = 2

	fileSuffix      = ".jnl"
	checkpointName  = "checkpoint"
	checkpointMagic = "SJC1"
	headerBytes     = 8              // length + crc
	fixedBytes      = 1 + 2 + 8      // kind + key length + base
	maxRecordBytes  = 1<<31 - 1      // length field bound
	maxKeyBytes     = math.MaxUint16 // key length field bound
	voidAll         = math.MinInt64  // a void of every record of the key
	dirPerm         = os.FileMode(0o755)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrClosed is returned for appends to a closed journal.
var ErrClosed = errors.New("journal: closed")

// Options configure a Journal. The zero value means the defaults.
type Options struct {
	// FileBytes is the rotation size of a journal file (default 64 MiB).
	FileBytes int64
	// CheckpointInterval is how often segments are synced and the journal truncated
	// (default 1 s).
	CheckpointInterval time.Duration
	// Logger receives recovery and checkpoint messages; nil means slog.Default().
	Logger *slog.Logger
	// Sync makes written bytes durable; nil means fdatasync(2). Tests replace it.
	Sync func(*os.File) error
}

// Flusher makes every byte written so far to one bucket's segments durable. The checkpoint
// calls it (never with a lock of the journal held) for every key with records since the
// previous checkpoint; a closed log's flusher returns nil (Close synced it).
type Flusher func() error

// Record is one batch handed to Append: its first offset and its bytes.
type Record struct {
	Base int64
	Data []byte
}

// Ticket is an enqueued append; Wait returns once its records are durable (or the journal
// failed).
type Ticket struct{ g *group }

// Wait blocks until the ticket's group is fdatasync'ed and returns the group's error.
func (t Ticket) Wait() error {
	<-t.g.done
	return t.g.err
}

// group is the set of records one fdatasync covers.
type group struct {
	done chan struct{}
	err  error
}

// Journal is the server-wide journal of one data directory. It is safe for concurrent use.
type Journal struct {
	root string
	dir  string
	opts Options

	mu       sync.Mutex
	buf      []byte             // encoded records not yet written; they belong to grp
	grp      *group             // the group the records in buf belong to
	inflight *group             // the group being written and synced, if any
	pos      int64              // journal position after buf
	dirty    map[string]Flusher // keys with records since the last checkpoint began
	failed   error              // sticky: a write or sync failed, every later append fails
	closed   bool

	kick chan struct{} // wakes the committer
	stop chan struct{}
	wg   sync.WaitGroup

	// Committer state, touched only by the committer goroutine (and Open/Close around it).
	file      *os.File
	fileStart int64 // position of file's first byte
	written   int64 // position after the last byte written
	spare     []byte

	fmu   sync.Mutex
	files []int64 // start positions of the files on disk, ascending; guarded by fmu

	cmu sync.Mutex // serialises checkpoints

	inFlight atomic.Int64 // fsync-per-ack appends of the server's logs between staging and durable
}

// BeginAppend counts an fsync-per-ack append of any log using the journal (journaled or
// not) as in flight until the returned function is called, and returns the count including
// it: the log store routes small appends through the journal only when enough are in flight
// for one journal sync to cover several buckets (the measurement: with few concurrent
// writers the buckets' own fdatasyncs run in parallel and win).
func (j *Journal) BeginAppend() (int64, func()) {
	n := j.inFlight.Add(1)
	var once sync.Once
	return n, func() { once.Do(func() { j.inFlight.Add(-1) }) }
}

// Open opens (creating) the journal of the data directory root, recovers what an earlier
// process left (see the package documentation) and starts the committer and the checkpoint.
func Open(root string, opts Options) (*Journal, error) {
	if opts.FileBytes <= 0 {
		opts.FileBytes = DefaultFileBytes
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Sync == nil {
		opts.Sync = fdatasync
	}
	j := &Journal{root: root, dir: filepath.Join(root, "journal"), opts: opts,
		dirty: map[string]Flusher{}, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		grp: &group{done: make(chan struct{})}}
	if err := os.MkdirAll(j.dir, dirPerm); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", j.dir, err)
	}
	end, err := j.recover()
	if err != nil {
		return nil, err
	}
	if err := j.startFile(end); err != nil {
		return nil, err
	}
	j.pos, j.written = end, end
	j.wg.Add(2)
	go j.committer()
	go j.checkpointer()
	return j, nil
}

// Key returns the journal key of a bucket directory, ok false when dir is not inside the
// journal's data directory (such a log cannot use the journal).
func (j *Journal) Key(dir string) (string, bool) {
	rel, err := filepath.Rel(j.root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) ||
		filepath.IsAbs(rel) || len(rel) > maxKeyBytes {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// Append enqueues recs of key; the ticket's Wait returns once they are durable. The caller
// has written the same bytes to the bucket's segment already and enqueues its appends in
// offset order; flush is what the checkpoint calls to sync that segment. The data is copied.
func (j *Journal) Append(key string, flush Flusher, recs []Record) (Ticket, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return Ticket{}, ErrClosed
	}
	if j.failed != nil {
		return Ticket{}, j.failed
	}
	for _, r := range recs {
		if len(r.Data) > maxRecordBytes-headerBytes-fixedBytes-len(key) {
			return Ticket{}, fmt.Errorf("journal: record of %d bytes is too large", len(r.Data))
		}
	}
	n0 := len(j.buf)
	for _, r := range recs {
		j.buf = appendRecord(j.buf, kindBatch, key, r.Base, r.Data)
	}
	j.pos += int64(len(j.buf) - n0)
	j.dirty[key] = flush
	t := Ticket{g: j.grp}
	j.wake()
	return t, nil
}

// Void durably records that key's records at or above from are void: the caller is about
// to cut its log there. It returns once the record is fdatasync'ed.
func (j *Journal) Void(key string, from int64) error {
	t, err := j.void(key, from)
	if err != nil {
		return err
	}
	return t.Wait()
}

// VoidAll enqueues a void of every record of key without waiting: the caller closed the
// log with every byte synced, so the records are redundant; the void only keeps a later
// directory of the same name from inheriting them, and Sync (which a new log calls at Open)
// waits for it.
func (j *Journal) VoidAll(key string) error {
	_, err := j.void(key, voidAll)
	return err
}

func (j *Journal) void(key string, from int64) (Ticket, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return Ticket{}, ErrClosed
	}
	if j.failed != nil {
		return Ticket{}, j.failed
	}
	n0 := len(j.buf)
	j.buf = appendRecord(j.buf, kindVoid, key, from, nil)
	j.pos += int64(len(j.buf) - n0)
	t := Ticket{g: j.grp}
	j.wake()
	return t, nil
}

// Sync waits until every record enqueued before the call is durable (at once when none is
// pending).
func (j *Journal) Sync() error {
	j.mu.Lock()
	var g *group
	switch {
	case len(j.buf) > 0:
		g = j.grp
	case j.inflight != nil:
		g = j.inflight
	}
	j.mu.Unlock()
	if g == nil {
		return nil
	}
	<-g.done
	return g.err
}

func (j *Journal) wake() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// committer writes each group with one write and one fdatasync and then releases it.
// Records enqueued meanwhile form the next group.
func (j *Journal) committer() {
	defer j.wg.Done()
	for {
		select {
		case <-j.kick:
		case <-j.stop:
			j.commitOnce() // whatever was enqueued before Close
			return
		}
		j.commitOnce()
	}
}

func (j *Journal) commitOnce() {
	j.mu.Lock()
	buf, g, failed := j.buf, j.grp, j.failed
	if len(buf) == 0 {
		j.mu.Unlock()
		return
	}
	j.buf = j.spare[:0]
	j.grp = &group{done: make(chan struct{})}
	j.inflight = g
	j.mu.Unlock()

	err := failed
	if err == nil {
		err = j.writeGroup(buf)
	}
	if err != nil && failed == nil {
		j.opts.Logger.Error("journal: write failed; journaled appends fall back to their segment's fdatasync until restart",
			"dir", j.dir, "err", err)
		j.mu.Lock()
		j.failed = err
		j.mu.Unlock()
	}
	g.err = err
	close(g.done)
	j.mu.Lock()
	j.inflight = nil
	j.mu.Unlock()
	if cap(buf) <= 4<<20 {
		j.spare = buf
	}
}

// writeGroup appends buf to the current file (rotating first when it is full) and
// fdatasyncs it.
func (j *Journal) writeGroup(buf []byte) error {
	if j.written-j.fileStart >= j.opts.FileBytes {
		if err := j.startFile(j.written); err != nil {
			return err
		}
	}
	err := faultfs.Before(faultfs.Write, j.file.Name())
	if err == nil {
		_, err = j.file.WriteAt(buf, j.written-j.fileStart)
	}
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", j.file.Name(), err)
	}
	if err := j.opts.Sync(j.file); err != nil {
		return fmt.Errorf("journal: sync %s: %w", j.file.Name(), err)
	}
	j.written += int64(len(buf))
	return nil
}

// startFile makes a new journal file starting at position start the current one.
func (j *Journal) startFile(start int64) error {
	f, err := os.OpenFile(filepath.Join(j.dir, fileName(start)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("journal: create file: %w", err)
	}
	if err := syncDir(j.dir); err != nil {
		f.Close()
		return fmt.Errorf("journal: create file: %w", err)
	}
	if j.file != nil {
		j.file.Close()
	}
	j.file, j.fileStart = f, start
	j.fmu.Lock()
	if n := len(j.files); n == 0 || j.files[n-1] != start {
		j.files = append(j.files, start)
	}
	j.fmu.Unlock()
	return nil
}

// checkpointer runs Checkpoint every interval.
func (j *Journal) checkpointer() {
	defer j.wg.Done()
	t := time.NewTicker(j.opts.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			if err := j.Checkpoint(); err != nil && !errors.Is(err, ErrClosed) {
				j.opts.Logger.Warn("journal: checkpoint failed; the journal keeps its records until one succeeds", "dir", j.dir, "err", err)
			}
		}
	}
}

// Checkpoint syncs the segments of every key journaled since the previous checkpoint, then
// records the position they cover and deletes the files wholly below it.
func (j *Journal) Checkpoint() error {
	j.cmu.Lock()
	defer j.cmu.Unlock()
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	// Every record below p was enqueued by a caller that had written its segment bytes
	// first, and its key is in dirty (or was in an earlier checkpoint's set).
	p, dirty := j.pos, j.dirty
	j.dirty = map[string]Flusher{}
	j.mu.Unlock()

	var errs []error
	failed := map[string]Flusher{}
	for k, f := range dirty {
		if err := f(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			failed[k] = f
		}
	}
	if len(failed) > 0 {
		j.mu.Lock()
		for k, f := range failed {
			if _, ok := j.dirty[k]; !ok {
				j.dirty[k] = f
			}
		}
		j.mu.Unlock()
		return errors.Join(errs...)
	}
	if err := writeCheckpoint(j.dir, p); err != nil {
		return err
	}
	j.fmu.Lock()
	var keep []int64
	for i, start := range j.files {
		// A file is wholly below p when the next file starts at or below p; the last file is
		// the current one and always stays.
		if i+1 < len(j.files) && j.files[i+1] <= p {
			if err := os.Remove(filepath.Join(j.dir, fileName(start))); err != nil && !os.IsNotExist(err) {
				keep = append(keep, start)
				errs = append(errs, err)
			}
			continue
		}
		keep = append(keep, start)
	}
	j.files = keep
	j.fmu.Unlock()
	return errors.Join(errs...)
}

// Close writes what is enqueued, stops the goroutines and closes the file. Records of logs
// still open stay in the journal (their logs close later or a restart replays them).
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	close(j.stop)
	j.wg.Wait()
	if j.file != nil {
		return j.file.Close()
	}
	return nil
}

// Files returns the number of journal files on disk (for tests and metrics).
func (j *Journal) Files() int {
	j.fmu.Lock()
	defer j.fmu.Unlock()
	return len(j.files)
}

func fileName(start int64) string { return fmt.Sprintf("%020d%s", start, fileSuffix) }

// appendRecord encodes one record onto b.
func appendRecord(b []byte, kind byte, key string, base int64, data []byte) []byte {
	n := 4 + fixedBytes + len(key) + len(data) // bytes after the length field
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	crcAt := len(b)
	b = append(b, 0, 0, 0, 0)
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	b = binary.LittleEndian.AppendUint64(b, uint64(base))
	b = append(b, data...)
	binary.LittleEndian.PutUint32(b[crcAt:], crc32.Checksum(b[crcAt+4:], castagnoli))
	return b
}

// entry is a decoded record.
type entry struct {
	kind byte
	key  string
	base int64
	data []byte
}

// decodeRecord decodes the record at the start of b; n is its size, ok false when b does not
// start with a whole record with a valid CRC.
func decodeRecord(b []byte) (e entry, n int, ok bool) {
	if len(b) < headerBytes {
		return e, 0, false
	}
	l := int(binary.LittleEndian.Uint32(b))
	if l < 4+fixedBytes || l > len(b)-4 {
		return e, 0, false
	}
	rec := b[4 : 4+l]
	if crc32.Checksum(rec[4:], castagnoli) != binary.LittleEndian.Uint32(rec) {
		return e, 0, false
	}
	body := rec[4:]
	e.kind = body[0]
	kl := int(binary.LittleEndian.Uint16(body[1:]))
	if 3+kl+8 > len(body) || (e.kind != kindBatch && e.kind != kindVoid) {
		return e, 0, false
	}
	e.key = string(body[3 : 3+kl])
	e.base = int64(binary.LittleEndian.Uint64(body[3+kl:]))
	e.data = body[3+kl+8:]
	return e, 4 + l, true
}

// ReplayRecord is a batch of a journal_replay file.
type ReplayRecord struct {
	Base int64
	Data []byte
}

// ReadReplay reads dir's journal_replay file (none: nil, nil). A damaged record ends the
// list with an error: the file was written and synced whole before it was renamed.
func ReadReplay(dir string) ([]ReplayRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, ReplayFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: read %s: %w", ReplayFile, err)
	}
	var out []ReplayRecord
	for len(b) > 0 {
		e, n, ok := decodeRecord(b)
		if !ok || e.kind != kindBatch {
			return out, fmt.Errorf("journal: %s is damaged after %d records", filepath.Join(dir, ReplayFile), len(out))
		}
		out = append(out, ReplayRecord{Base: e.base, Data: e.data})
		b = b[n:]
	}
	return out, nil
}

// RemoveReplay deletes dir's journal_replay file once its records are in synced segments.
func RemoveReplay(dir string) error {
	if err := os.Remove(filepath.Join(dir, ReplayFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return syncDir(dir)
}

// recover reads the journal from the checkpoint on, hands each key's records to its bucket
// directory and deletes the journal files. It returns the position the journal continues at.
func (j *Journal) recover() (int64, error) {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return 0, fmt.Errorf("journal: open %s: %w", j.dir, err)
	}
	var starts []int64
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp"):
			_ = os.Remove(filepath.Join(j.dir, name))
		case strings.HasSuffix(name, fileSuffix):
			if s, err := strconv.ParseInt(strings.TrimSuffix(name, fileSuffix), 10, 64); err == nil && s >= 0 {
				starts = append(starts, s)
			}
		}
	}
	sort.Slice(starts, func(a, b int) bool { return starts[a] < starts[b] })
	ckpt := readCheckpoint(j.dir) // 0 when missing or damaged: replaying more is harmless
	end := ckpt
	perKey := map[string][]entry{}
	var order []string
	records := 0
	for i, start := range starts {
		last := i == len(starts)-1
		if i+1 < len(starts) && starts[i+1] <= ckpt {
			continue // wholly below the checkpoint
		}
		path := filepath.Join(j.dir, fileName(start))
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("journal: read %s: %w", path, err)
		}
		off := 0
		for off < len(b) {
			e, n, ok := decodeRecord(b[off:])
			if !ok {
				if !last {
					return 0, fmt.Errorf("journal: %s is damaged at byte %d, before the last journal file (it was synced whole): move it away to start without its records", path, off)
				}
				j.opts.Logger.Warn("journal: cut the torn tail of the last group (never acknowledged)",
					"file", path, "valid_bytes", off, "file_bytes", len(b))
				break
			}
			if start+int64(off) >= ckpt {
				if _, seen := perKey[e.key]; !seen {
					order = append(order, e.key)
				}
				perKey[e.key] = append(perKey[e.key], e)
				records++
			}
			off += n
		}
		end = max(end, start+int64(off))
	}
	handed := 0
	for _, key := range order {
		n, err := j.handOver(key, perKey[key])
		if err != nil {
			return 0, err
		}
		handed += n
	}
	if records > 0 {
		j.opts.Logger.Info("journal: recovered records for the bucket logs to replay",
			"dir", j.dir, "records", records, "batches_handed_over", handed, "buckets", len(order))
	}
	// Everything is in the replay files now: the journal restarts empty at end.
	if err := writeCheckpoint(j.dir, end); err != nil {
		return 0, err
	}
	for _, start := range starts {
		if err := os.Remove(filepath.Join(j.dir, fileName(start))); err != nil && !os.IsNotExist(err) {
			return 0, fmt.Errorf("journal: remove recovered file: %w", err)
		}
	}
	return end, nil
}

// handOver merges key's records (voids applied) into its directory's journal_replay file.
func (j *Journal) handOver(key string, es []entry) (int, error) {
	if len(key) == 0 || strings.Contains(key, "..") {
		return 0, nil
	}
	dir := filepath.Join(j.root, filepath.FromSlash(key))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return 0, nil // the bucket was dropped
	}
	old, err := ReadReplay(dir)
	if err != nil {
		return 0, err
	}
	var keep []ReplayRecord
	keep = append(keep, old...)
	for _, e := range es {
		switch e.kind {
		case kindBatch:
			keep = append(keep, ReplayRecord{Base: e.base, Data: e.data})
		case kindVoid:
			k := keep[:0]
			for _, r := range keep {
				if e.base != voidAll && r.Base < e.base {
					k = append(k, r)
				}
			}
			keep = k
		}
	}
	if len(keep) == 0 {
		if old != nil {
			return 0, RemoveReplay(dir)
		}
		return 0, nil
	}
	var b []byte
	for _, r := range keep {
		b = appendRecord(b, kindBatch, "", r.Base, r.Data)
	}
	if err := writeFileAtomic(filepath.Join(dir, ReplayFile), b); err != nil {
		return 0, fmt.Errorf("journal: hand over to %s: %w", dir, err)
	}
	return len(keep), nil
}

func readCheckpoint(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, checkpointName))
	if err != nil || len(b) != 16 || string(b[:4]) != checkpointMagic ||
		crc32.Checksum(b[8:], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return 0
	}
	return max(int64(binary.LittleEndian.Uint64(b[8:])), 0)
}

func writeCheckpoint(dir string, p int64) error {
	b := make([]byte, 16)
	copy(b, checkpointMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(p))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	if err := writeFileAtomic(filepath.Join(dir, checkpointName), b); err != nil {
		return fmt.Errorf("journal: write checkpoint: %w", err)
	}
	return nil
}

// writeFileAtomic writes data to path via a synced temporary file, a rename and a directory
// sync.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := fdatasync(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}
