// Package rocksdbdir writes directories that RocksDB opens as a database: block-based tables
// (written by Pebble's sstable writer in its RocksDB table format), a MANIFEST that lists them
// and the CURRENT file that names the MANIFEST. Strom's KV snapshots use it so that Fluss
// clients, which open a downloaded snapshot with RocksDB (docs/kv-snapshots.md), read them.
//
// What RocksDB needs (RocksDB's VersionEdit tags are the ones Pebble's internal/manifest
// declares, as Pebble's manifest derives from RocksDB's; make test-rocksdb checks the result
// with RocksDB itself):
//   - Tables: Pebble's TableFormatRocksDBv2 (block-based table, footer version 2, CRC32C
//     block checksums) with the comparator named "leveldb.BytewiseComparator" (Pebble's
//     default comparer carries that name and RocksDB's byte order). Internal keys are the
//     user key followed by an 8-byte little-endian trailer seq<<8|type; type 1 is a value
//     (Pebble's SET), type 0 a deletion (Pebble's DEL).
//   - MANIFEST-NNNNNN: a log in LevelDB's record format (32 KiB blocks, masked CRC32C; Pebble's
//     record package writes it) of VersionEdit records, each a sequence of (varint tag, field).
//     Recovery requires the log number (tag 2), the next file number (3) and the last sequence
//     (4); the comparator (1) must match the reader's. Each table is a NewFile4 entry (103):
//     level, file number, file size, smallest and largest internal key, smallest and largest
//     sequence number, then custom fields ended by the terminate tag 1. The default column
//     family (id 0) exists without an entry.
//   - CURRENT: the MANIFEST's file name and a newline.
//
// Tables are named NNNNNN.sst after their file number; the numbers must be unique within a
// database and below the next file number.
package rocksdbdir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/record"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// ComparatorName is RocksDB's default (bytewise) comparator, the order Strom keys sort in.
const ComparatorName = "leveldb.BytewiseComparator"

// NumLevels is RocksDB's default number of LSM levels; tables go in levels 0..NumLevels-1.
const NumLevels = 7

// Value types of RocksDB internal keys (db/dbformat.h), equal to Pebble's kinds.
const (
	typeDeletion = 0
	typeValue    = 1
)

// VersionEdit tags (db/version_edit.h).
const (
	tagComparator     = 1
	tagLogNumber      = 2
	tagNextFileNumber = 3
	tagLastSequence   = 4
	tagNewFile4       = 103
	customTerminate   = 1
)

// TableName is the file name RocksDB gives table number n.
func TableName(n uint64) string { return fmt.Sprintf("%06d.sst", n) }

// ManifestName is the file name of MANIFEST number n.
func ManifestName(n uint64) string { return fmt.Sprintf("MANIFEST-%06d", n) }

// Table describes one table file of a database.
type Table struct {
	Number uint64 // the file number (the file is TableName(Number))
	Level  int    // the LSM level it sits in
	Size   uint64 // its size in bytes
	// Smallest and Largest are its first and last internal key (user key + trailer).
	Smallest, Largest []byte
	// SmallestSeq and LargestSeq bound the sequence numbers of its entries.
	SmallestSeq, LargestSeq uint64
	Entries                 uint64 // number of entries (values and deletions)
}

// TableWriter writes one RocksDB table. Keys must be added in increasing order.
type TableWriter struct {
	w      *sstable.Writer
	path   string
	number uint64
	n      uint64
}

// CreateTable creates table number n in dir.
func CreateTable(dir string, n uint64) (*TableWriter, error) {
	path := filepath.Join(dir, TableName(n))
	f, err := vfs.Default.Create(path)
	if err != nil {
		return nil, fmt.Errorf("rocksdbdir: create %s: %w", path, err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
		TableFormat: sstable.TableFormatRocksDBv2,
		Compression: sstable.SnappyCompression,
		Checksum:    sstable.ChecksumTypeCRC32c,
		// Comparer and merger are left at Pebble's defaults: the comparer is the bytewise
		// order under RocksDB's name ComparatorName; the merger is never used (no merge entries).
	})
	return &TableWriter{w: w, path: path, number: n}, nil
}

// Set adds key with value at sequence number seq.
func (t *TableWriter) Set(key, value []byte, seq uint64) error {
	t.n++
	return t.w.Add(sstable.InternalKey{UserKey: key, Trailer: seq<<8 | typeValue}, value)
}

// Delete adds a deletion of key at sequence number seq.
func (t *TableWriter) Delete(key []byte, seq uint64) error {
	t.n++
	return t.w.Add(sstable.InternalKey{UserKey: key, Trailer: seq<<8 | typeDeletion}, nil)
}

// Entries returns the number of entries added so far.
func (t *TableWriter) Entries() uint64 { return t.n }

// Close finishes and syncs the table and describes it for level. A table with no entries is
// removed and reported with ok false (RocksDB has no empty tables).
func (t *TableWriter) Close(level int) (tbl Table, ok bool, err error) {
	if err := t.w.Close(); err != nil {
		return Table{}, false, fmt.Errorf("rocksdbdir: write %s: %w", t.path, err)
	}
	if t.n == 0 {
		return Table{}, false, os.Remove(t.path)
	}
	md, err := t.w.Metadata()
	if err != nil {
		return Table{}, false, err
	}
	return Table{
		Number: t.number, Level: level, Size: md.Size,
		Smallest: encodeInternal(md.SmallestPoint), Largest: encodeInternal(md.LargestPoint),
		SmallestSeq: md.SmallestSeqNum, LargestSeq: md.LargestSeqNum, Entries: t.n,
	}, true, nil
}

// Abort closes and removes an unfinished table.
func (t *TableWriter) Abort() {
	_ = t.w.Close()
	_ = os.Remove(t.path)
}

func encodeInternal(k sstable.InternalKey) []byte {
	b := make([]byte, len(k.UserKey)+8)
	copy(b, k.UserKey)
	binary.LittleEndian.PutUint64(b[len(k.UserKey):], k.Trailer)
	return b
}

// Manifest is the content of a database's MANIFEST.
type Manifest struct {
	Number         uint64  // the MANIFEST's own file number
	NextFileNumber uint64  // above every table number and Number
	Tables         []Table // at most one table per level above 0 may cover a key
}

// EncodeManifest returns the MANIFEST file's bytes: one VersionEdit holding everything.
func EncodeManifest(m Manifest) ([]byte, error) {
	var lastSeq uint64
	for _, t := range m.Tables {
		if t.Number >= m.NextFileNumber || t.Number == m.Number {
			return nil, fmt.Errorf("rocksdbdir: table number %d collides with the manifest (%d) or the next file number (%d)", t.Number, m.Number, m.NextFileNumber)
		}
		if t.Level < 0 || t.Level >= NumLevels {
			return nil, fmt.Errorf("rocksdbdir: table %d in level %d", t.Number, t.Level)
		}
		lastSeq = max(lastSeq, t.LargestSeq)
	}
	if m.Number >= m.NextFileNumber {
		return nil, errors.New("rocksdbdir: manifest number not below the next file number")
	}
	var e []byte
	e = binary.AppendUvarint(e, tagComparator)
	e = appendBytes(e, []byte(ComparatorName))
	e = binary.AppendUvarint(e, tagLogNumber)
	e = binary.AppendUvarint(e, 0)
	e = binary.AppendUvarint(e, tagNextFileNumber)
	e = binary.AppendUvarint(e, m.NextFileNumber)
	e = binary.AppendUvarint(e, tagLastSequence)
	e = binary.AppendUvarint(e, lastSeq)
	for _, t := range m.Tables {
		e = binary.AppendUvarint(e, tagNewFile4)
		e = binary.AppendUvarint(e, uint64(t.Level))
		e = binary.AppendUvarint(e, t.Number)
		e = binary.AppendUvarint(e, t.Size)
		e = appendBytes(e, t.Smallest)
		e = appendBytes(e, t.Largest)
		e = binary.AppendUvarint(e, t.SmallestSeq)
		e = binary.AppendUvarint(e, t.LargestSeq)
		e = binary.AppendUvarint(e, customTerminate)
	}
	var buf bytesBuffer
	w := record.NewWriter(&buf)
	if _, err := w.WriteRecord(e); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.b, nil
}

// WriteManifest writes MANIFEST-<m.Number> and CURRENT into dir and syncs them.
func WriteManifest(dir string, m Manifest) error {
	data, err := EncodeManifest(m)
	if err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(dir, ManifestName(m.Number)), data); err != nil {
		return err
	}
	return writeFileSync(filepath.Join(dir, "CURRENT"), []byte(ManifestName(m.Number)+"\n"))
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

type bytesBuffer struct{ b []byte }

func (b *bytesBuffer) Write(p []byte) (int, error) {
	b.b = append(b.b, p...)
	return len(p), nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("rocksdbdir: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rocksdbdir: write %s: %w", path, err)
	}
	return nil
}
