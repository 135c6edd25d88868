package rocksdbdir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/record"
)

// writeDB writes a database of a base table in the bottom level (keys k000..k199 = v0-<i>) and
// a newer table one level up that overwrites every 3rd key and deletes every 5th, and returns
// the state RocksDB must show.
func writeDB(t *testing.T, dir string) map[string]string {
	t.Helper()
	want := map[string]string{}
	base, err := CreateTable(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("v0-%d", i)
		if err := base.Set([]byte(k), []byte(v), 1); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	bt, ok, err := base.Close(NumLevels - 1)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	delta, err := CreateTable(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 220; i++ {
		k := fmt.Sprintf("k%03d", i)
		switch {
		case i%5 == 0:
			err = delta.Delete([]byte(k), 2)
			delete(want, k)
		case i%3 == 0:
			v := fmt.Sprintf("v1-%d", i)
			err = delta.Set([]byte(k), []byte(v), 2)
			want[k] = v
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	dt, ok, err := delta.Close(NumLevels - 2)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := WriteManifest(dir, Manifest{Number: 3, NextFileNumber: 4, Tables: []Table{bt, dt}}); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestManifestEncoding checks the MANIFEST against the layout RocksDB's VersionEdit decoder
// reads: one record, the required fields, and a NewFile4 entry per table.
func TestManifestEncoding(t *testing.T) {
	dir := t.TempDir()
	writeDB(t, dir)
	cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if err != nil || string(cur) != "MANIFEST-000003\n" {
		t.Fatalf("CURRENT = %q, %v", cur, err)
	}
	f, err := os.Open(filepath.Join(dir, "MANIFEST-000003"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := record.NewReader(f, 0)
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rec); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	tags := map[uint64]int{}
	uv := func() uint64 {
		v, n := uvarint(b)
		if n <= 0 {
			t.Fatalf("bad varint at %x", b)
		}
		b = b[n:]
		return v
	}
	bs := func() []byte {
		l := uv()
		s := b[:l]
		b = b[l:]
		return s
	}
	for len(b) > 0 {
		tag := uv()
		tags[tag]++
		switch tag {
		case tagComparator:
			if s := string(bs()); s != ComparatorName {
				t.Errorf("comparator %q", s)
			}
		case tagLogNumber, tagLastSequence:
			uv()
		case tagNextFileNumber:
			if n := uv(); n != 4 {
				t.Errorf("next file number %d", n)
			}
		case tagNewFile4:
			level, num, size := uv(), uv(), uv()
			smallest, largest := bs(), bs()
			uv()
			uv()
			if uv() != customTerminate {
				t.Fatal("NewFile4 without terminate")
			}
			st, err := os.Stat(filepath.Join(dir, TableName(num)))
			if err != nil || uint64(st.Size()) != size {
				t.Errorf("table %d: size %d in manifest, stat %v %v", num, size, st, err)
			}
			if string(smallest[:len(smallest)-8]) != "k000" || level < 5 {
				t.Errorf("table %d level %d smallest %q largest %q", num, level, smallest, largest)
			}
		default:
			t.Fatalf("unexpected tag %d", tag)
		}
	}
	if tags[tagNewFile4] != 2 || tags[tagLogNumber] != 1 || tags[tagLastSequence] != 1 {
		t.Errorf("tags %v", tags)
	}
	if _, err := r.Next(); err == nil {
		t.Error("more than one record")
	}
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func TestManifestRejectsCollidingNumbers(t *testing.T) {
	if _, err := EncodeManifest(Manifest{Number: 2, NextFileNumber: 3, Tables: []Table{{Number: 2}}}); err == nil {
		t.Error("a table numbered like the manifest was accepted")
	}
	if _, err := EncodeManifest(Manifest{Number: 1, NextFileNumber: 3, Tables: []Table{{Number: 3}}}); err == nil {
		t.Error("a table at the next file number was accepted")
	}
}

// TestRocksDBOpens opens the database with RocksDB itself (frocksdbjni, as Fluss's client) when
// ROCKSDB_CHECK names tests/rocksdb/run.sh (make test-rocksdb); skipped otherwise.
func TestRocksDBOpens(t *testing.T) {
	check := os.Getenv("ROCKSDB_CHECK")
	if check == "" {
		t.Skip("ROCKSDB_CHECK is not set (make test-rocksdb)")
	}
	dir := t.TempDir()
	want := writeDB(t, dir)
	empty := t.TempDir()
	if err := WriteManifest(empty, Manifest{Number: 1, NextFileNumber: 2}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadWithRocksDB(check, dir, empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(got[empty]) != 0 {
		t.Errorf("empty database shows %d entries", len(got[empty]))
	}
	if len(got[dir]) != len(want) {
		t.Errorf("RocksDB shows %d entries, want %d", len(got[dir]), len(want))
	}
	for k, v := range want {
		if got[dir][k] != v {
			t.Errorf("key %s: RocksDB %q, want %q", k, got[dir][k], v)
		}
	}
}
