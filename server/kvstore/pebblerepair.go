package kvstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/stromdb/strom/server/cluster"
)

// removeCorruptTables finds the Pebble table files whose block checksums fail and takes each
// out of the LSM whole, without reading it: an ingest-and-excise of a span covering the
// file's key range (Pebble drops a file inside the excised span from its metadata). Every key
// in the span is gone afterwards, including keys of other buckets and recent keys in
// memtables; so the applied offset of every bucket with data keys in a span is deleted too,
// which makes its next recovery replay its whole changelog (replaying a changelog from the
// start over any subset of its own final state yields that state). It returns the buckets
// whose state must be rebuilt; the caller holds every open affected tablet's mu, or the
// tablets are not open. Runs rarely (after a corruption report) and reads every table file.
func (s *Store) removeCorruptTables() (affected []cutBuckets, err error) {
	s.repairMu.Lock()
	defer s.repairMu.Unlock()
	levels, err := s.db.SSTables()
	if err != nil {
		return nil, err
	}
	var spans []pebble.KeyRange
	checked := map[uint64]bool{}
	for _, level := range levels {
		for _, f := range level {
			num := uint64(f.BackingSSTNum)
			if checked[num] {
				continue
			}
			checked[num] = true
			if verr := validateTable(filepath.Join(s.dir, fmt.Sprintf("%06d.sst", num))); verr != nil {
				s.log.Error("kvstore: corrupt table file; removing it and rebuilding the buckets it held from their changelogs",
					"file", fmt.Sprintf("%06d.sst", num), "err", verr)
				spans = append(spans, pebble.KeyRange{Start: bytes.Clone(f.Smallest.UserKey), End: append(bytes.Clone(f.Largest.UserKey), 0)})
			}
		}
	}
	if len(spans) == 0 {
		return nil, nil
	}
	// First make the loss of the applied offsets durable, then excise: a crash in between
	// leaves buckets that replay their whole changelog over intact data (slow but right),
	// never a bucket whose keys are gone while its applied offset remains.
	for _, sp := range spans {
		br := bucketsOf(sp)
		affected = append(affected, br)
		if err := s.db.DeleteRange(br.metaLo, br.metaHi, pebble.NoSync); err != nil {
			return nil, err
		}
	}
	if err := s.flushWithin(checkpointFlushWait); err != nil {
		return nil, err
	}
	for _, sp := range spans {
		if err := s.exciseSpan(sp); err != nil {
			return affected, fmt.Errorf("kvstore: remove corrupt table: %w", err)
		}
	}
	return affected, nil
}

// validateTable checks every block checksum of one table file.
func validateTable(path string) error {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return err
	}
	r, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return err
	}
	rd, err := sstable.NewReader(r, sstable.ReaderOptions{})
	if err != nil {
		r.Close()
		return err
	}
	defer rd.Close()
	return rd.ValidateBlockChecksums()
}

// exciseSpan removes every key in sp from the LSM by ingesting a table that holds only a range
// deletion over sp, with sp as the excise span.
func (s *Store) exciseSpan(sp pebble.KeyRange) error {
	path := filepath.Join(s.dir, "repair-excise.sst.tmp")
	defer os.Remove(path)
	f, err := vfs.Default.Create(path)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
		TableFormat: s.db.FormatMajorVersion().MaxTableFormat(),
	})
	if err := w.DeleteRange(sp.Start, sp.End); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	_, err = s.db.IngestAndExcise([]string{path}, nil, sp)
	return err
}

// cutBuckets is a range of buckets in key order: the meta keys [metaLo, metaHi) are the
// applied offsets of every bucket with data keys in the excised span.
type cutBuckets struct {
	metaLo, metaHi []byte
}

// bucketsOf returns the buckets whose data keys may lie in sp (keys are tag | 20-byte bucket
// id | ...; data sorts before meta).
func bucketsOf(sp pebble.KeyRange) cutBuckets {
	id := func(k []byte) []byte {
		out := make([]byte, bucketLen-1)
		copy(out, k[min(1, len(k)):])
		return out
	}
	var lo, hi []byte
	switch {
	case len(sp.Start) > 0 && sp.Start[0] == tagData:
		lo = append([]byte{tagMeta}, id(sp.Start)...)
	case len(sp.Start) > 0 && sp.Start[0] > tagData:
		lo = []byte{tagMeta, 0xff} // no data key in the span: an empty range
	default:
		lo = []byte{tagMeta}
	}
	if len(sp.End) > 0 && sp.End[0] == tagData {
		hi = append(append([]byte{tagMeta}, id(sp.End)...), 0)
	} else {
		hi = []byte{tagMeta + 1}
	}
	if bytes.Compare(lo, hi) > 0 {
		hi = lo
	}
	return cutBuckets{metaLo: lo, metaHi: hi}
}

// contains reports whether bucket b's state was cut by the excise.
func (r cutBuckets) contains(b cluster.Bucket) bool {
	k := bucketKey(tagMeta, b)
	return bytes.Compare(k, r.metaLo) >= 0 && bytes.Compare(k, r.metaHi) < 0
}

// repairAfterCorruption removes corrupt table files and rebuilds every open tablet whose
// state they held, from its changelog. t (already locked by the caller, or not yet
// registered) is rebuilt by the caller.
func (s *Store) repairAfterCorruption(t *Tablet) error {
	s.mu.Lock()
	var others []*Tablet
	for _, o := range s.tablets {
		if o != t {
			others = append(others, o)
		}
	}
	s.mu.Unlock()
	// Lock the other open tablets in a fixed order so that no Put commits into a span while it
	// is excised (t's caller holds t.mu already).
	sort.Slice(others, func(i, j int) bool {
		return bytes.Compare(bucketKey(tagMeta, others[i].bucket), bucketKey(tagMeta, others[j].bucket)) < 0
	})
	for _, o := range others {
		o.mu.Lock()
	}
	defer func() {
		for _, o := range others {
			o.mu.Unlock()
		}
	}()
	affected, err := s.removeCorruptTables()
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range others {
		for _, r := range affected {
			if r.contains(o.bucket) && o.failed == nil {
				if err := o.rec.rebuild(context.Background()); err != nil {
					errs = append(errs, o.goOffline("rebuild after corruption failed: %v", err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}
