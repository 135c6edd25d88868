package kvsnap

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/sstable"

	"github.com/stromdb/strom/internal/rocksdbdir"
	"github.com/stromdb/strom/server/kvstore"
)

// Snapshot is one completed KV snapshot of a bucket, as the metadata store keeps it.
type Snapshot struct {
	ID int64 `json:"id"`
	// LogOffset is the first changelog offset the snapshot does not contain.
	LogOffset int64 `json:"log_offset"`
	CreatedMs int64 `json:"created_ms"`
	// Manifest is the number of the snapshot's MANIFEST (in its private directory).
	Manifest uint64 `json:"manifest"`
	// Tables are its table files (in the bucket's shared directory), newest level first.
	Tables []rocksdbdir.Table `json:"tables"`
	Rows   int64              `json:"rows"`
	// Dir is the name of the snapshot's private directory (MANIFEST, CURRENT); empty in
	// records written before it was recorded, which used snap-<id>.
	Dir string `json:"dir,omitempty"`
	// LeaderEpoch is the leader epoch of the server that took it.
	LeaderEpoch int32 `json:"leader_epoch,omitempty"`
	// FormatVersion is the version of this record and of the snapshot files it names
	// (SnapshotFormat); absent in records written before it was recorded, which are
	// version 1.
	FormatVersion int `json:"format_version,omitempty"`
}

// dirName is the name of the snapshot's private directory under its bucket's directory.
func (s *Snapshot) dirName() string {
	if s.Dir != "" {
		return s.Dir
	}
	return snapDirName(s.ID)
}

// nextFileNumber is above every file number the snapshot uses.
func (s *Snapshot) nextFileNumber() uint64 { return s.Manifest + 1 }

// minLevel is the lowest level holding a table (rocksdbdir.NumLevels when there is none).
func (s *Snapshot) minLevel() int {
	l := rocksdbdir.NumLevels
	for _, t := range s.Tables {
		l = min(l, t.Level)
	}
	return l
}

func (s *Snapshot) maxSeq() uint64 {
	var q uint64
	for _, t := range s.Tables {
		q = max(q, t.LargestSeq)
	}
	return q
}

// build writes the files of snapshot id of the view's state: incrementally on top of prev
// when prev is given and a level above its tables is free, as a full copy otherwise. Tables go
// to shared, the MANIFEST and CURRENT to private (created here). nextFile is the first unused
// file number of the bucket.
func build(view *kvstore.StateView, prev *Snapshot, shared, private string, id int64, nextFile uint64, log *slog.Logger) (*Snapshot, error) {
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(private, 0o755); err != nil {
		return nil, err
	}
	if prev != nil && prev.minLevel() > 1 && len(prev.Tables) > 0 {
		s, ok, err := buildDelta(view, prev, shared, id, nextFile)
		if err == nil && ok {
			return finish(s, private, nextFile+1)
		}
		// A previous snapshot that cannot be read back (a table file lost or damaged) must not
		// stop snapshots: a full copy does not read it.
		if err != nil {
			log.Warn("incremental kv snapshot failed, writing a full one", "snapshot", id, "err", err)
		}
	}
	s, err := buildFull(view, shared, id, nextFile)
	if err != nil {
		return nil, err
	}
	return finish(s, private, nextFile+1)
}

func finish(s *Snapshot, private string, manifest uint64) (*Snapshot, error) {
	s.Manifest = manifest
	if err := rocksdbdir.WriteManifest(private, rocksdbdir.Manifest{Number: manifest, NextFileNumber: manifest + 1, Tables: s.Tables}); err != nil {
		return nil, err
	}
	return s, syncDir(private)
}

// buildFull writes every row into one table in the bottom level.
func buildFull(view *kvstore.StateView, shared string, id int64, number uint64) (*Snapshot, error) {
	w, err := rocksdbdir.CreateTable(shared, number)
	if err != nil {
		return nil, err
	}
	it, err := view.Iter()
	if err != nil {
		w.Abort()
		return nil, err
	}
	var rows int64
	for ; it.Valid(); it.Next() {
		if err := w.Set(it.Key(), it.Value(), 1); err != nil {
			_ = it.Close()
			w.Abort()
			return nil, err
		}
		rows++
	}
	if err := it.Close(); err != nil {
		w.Abort()
		return nil, err
	}
	s := &Snapshot{ID: id, LogOffset: view.Offset, Rows: rows}
	t, ok, err := w.Close(rocksdbdir.NumLevels - 1)
	if err != nil {
		return nil, err
	}
	if ok {
		s.Tables = []rocksdbdir.Table{t}
	}
	return s, syncDir(shared)
}

// buildDelta writes the rows that differ between prev's state and the view (new and changed
// rows as values, removed ones as deletions) into one table a level above prev's, at a higher
// sequence number, and reuses prev's tables. ok is false, and nothing is kept, when the changes
// outnumber half the rows: a full copy is then smaller to read.
func buildDelta(view *kvstore.StateView, prev *Snapshot, shared string, id int64, number uint64) (_ *Snapshot, ok bool, err error) {
	old, err := openState(shared, prev)
	if err != nil {
		return nil, false, err
	}
	defer old.close()
	cur, err := view.Iter()
	if err != nil {
		return nil, false, err
	}
	defer func() { err = errors.Join(err, cur.Close()) }()
	w, err := rocksdbdir.CreateTable(shared, number)
	if err != nil {
		return nil, false, err
	}
	seq := prev.maxSeq() + 1
	var rows int64
	for cur.Valid() || old.valid() {
		var c int
		switch {
		case !cur.Valid():
			c = 1
		case !old.valid():
			c = -1
		default:
			c = bytes.Compare(cur.Key(), old.key)
		}
		switch {
		case c < 0: // a new row
			err = w.Set(cur.Key(), cur.Value(), seq)
			rows++
			cur.Next()
		case c > 0: // a removed row
			err = w.Delete(old.key, seq)
			old.next()
		default:
			if !bytes.Equal(cur.Value(), old.value) {
				err = w.Set(cur.Key(), cur.Value(), seq)
			}
			rows++
			cur.Next()
			old.next()
		}
		if err == nil {
			err = old.err
		}
		if err != nil {
			w.Abort()
			return nil, false, err
		}
	}
	if w.Entries() > 0 && w.Entries()*2 > uint64(rows) {
		w.Abort()
		return nil, false, nil
	}
	s := &Snapshot{ID: id, LogOffset: view.Offset, Rows: rows}
	t, has, err := w.Close(prev.minLevel() - 1)
	if err != nil {
		return nil, false, err
	}
	if has {
		s.Tables = append(s.Tables, t)
	}
	s.Tables = append(s.Tables, prev.Tables...)
	return s, true, syncDir(shared)
}

// state iterates a snapshot's rows in key order by merging its tables: for each key the entry
// of the lowest level wins, and a deletion hides the key.
type state struct {
	files []*os.File
	rs    []*sstable.Reader
	its   []sstable.Iterator // newest (lowest level) first
	keys  [][]byte           // current user key of each iterator, nil when exhausted
	kinds []uint8
	vals  [][]byte
	key   []byte
	value []byte
	ok    bool
	err   error
}

func openState(shared string, s *Snapshot) (*state, error) {
	st := &state{}
	tables := append([]rocksdbdir.Table(nil), s.Tables...)
	// newest first: lower level, then higher sequence
	for i := 1; i < len(tables); i++ {
		for j := i; j > 0 && tables[j].Level < tables[j-1].Level; j-- {
			tables[j], tables[j-1] = tables[j-1], tables[j]
		}
	}
	for _, t := range tables {
		f, err := os.Open(filepath.Join(shared, rocksdbdir.TableName(t.Number)))
		if err != nil {
			st.close()
			return nil, err
		}
		st.files = append(st.files, f)
		rd, err := sstable.NewSimpleReadable(f)
		if err != nil {
			st.close()
			return nil, err
		}
		r, err := sstable.NewReader(rd, sstable.ReaderOptions{})
		if err != nil {
			st.close()
			return nil, fmt.Errorf("kvsnap: open table %d: %w", t.Number, err)
		}
		st.rs = append(st.rs, r)
		it, err := r.NewIter(nil, nil)
		if err != nil {
			st.close()
			return nil, err
		}
		st.its = append(st.its, it)
		st.keys = append(st.keys, nil)
		st.kinds = append(st.kinds, 0)
		st.vals = append(st.vals, nil)
		st.load(len(st.its)-1, true)
	}
	st.next()
	return st, nil
}

// load reads iterator i's current entry (after First when first, else after Next).
func (s *state) load(i int, first bool) {
	var k *sstable.InternalKey
	var lv pebble.LazyValue
	if first {
		k, lv = s.its[i].First()
	} else {
		k, lv = s.its[i].Next()
	}
	if k == nil {
		s.keys[i] = nil
		if err := s.its[i].Error(); err != nil && s.err == nil {
			s.err = err
		}
		return
	}
	v, _, err := lv.Value(nil)
	if err != nil && s.err == nil {
		s.err = err
	}
	s.keys[i] = append(s.keys[i][:0], k.UserKey...)
	s.kinds[i] = uint8(k.Trailer & 0xff)
	s.vals[i] = append(s.vals[i][:0], v...)
}

func (s *state) valid() bool { return s.ok }

// next moves to the next live key.
func (s *state) next() {
	for {
		var min []byte
		for _, k := range s.keys {
			if k != nil && (min == nil || bytes.Compare(k, min) < 0) {
				min = k
			}
		}
		if min == nil || s.err != nil {
			s.ok = false
			return
		}
		s.key = append(s.key[:0], min...)
		winner := -1
		for i, k := range s.keys {
			if k != nil && bytes.Equal(k, s.key) {
				if winner < 0 {
					winner = i
					s.value = append(s.value[:0], s.vals[i]...)
					s.ok = s.kinds[i] == 1
				}
				s.load(i, false)
			}
		}
		if s.ok {
			return
		}
	}
}

func (s *state) close() {
	for _, it := range s.its {
		_ = it.Close()
	}
	for _, r := range s.rs {
		_ = r.Close() // closes its readable, and so the file
	}
	if len(s.rs) < len(s.files) {
		for _, f := range s.files[len(s.rs):] {
			_ = f.Close()
		}
	}
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func tableName(n uint64) string    { return rocksdbdir.TableName(n) }
func manifestName(n uint64) string { return rocksdbdir.ManifestName(n) }
