package formatver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testFormat = Format{Name: "test-dir", Current: 2, Supported: []int{1, 2}}

func TestOpenDirReadsLegacyDataAsVersionOneAndRecordsIt(t *testing.T) {
	dir := t.TempDir()
	v, err := OpenDir(dir, testFormat)
	if err != nil || v != LegacyVersion {
		t.Fatalf("OpenDir of a directory without a format file = %d, %v; want %d, nil", v, err, LegacyVersion)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatalf("format file not written: %v", err)
	}
	if !strings.Contains(string(b), `"version":1`) || !strings.Contains(string(b), `"format":"test-dir"`) {
		t.Fatalf("format file = %s", b)
	}
	if v, err := OpenDir(dir, testFormat); err != nil || v != 1 {
		t.Fatalf("second OpenDir = %d, %v", v, err)
	}
}

func TestOpenDirRefusesAVersionItDoesNotRead(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, testFormat, 7); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDir(dir, testFormat)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("OpenDir of version 7 = %v; want an *UnsupportedError", err)
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(dir, FileName), "test-dir", "version 7", "versions 1, 2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
}

func TestOpenDirRefusesAnotherFormatsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, Format{Name: "other"}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir, testFormat); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("OpenDir of another format's directory = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir, testFormat); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("OpenDir of a garbled format file = %v", err)
	}
}

func TestRecordVersion(t *testing.T) {
	for _, tc := range []struct {
		data    string
		want    int
		refused bool
	}{
		{`{"id":3}`, 1, false},
		{`{"id":3,"format_version":2}`, 2, false},
		{`{"id":3,"format_version":9}`, 9, true},
	} {
		v, err := RecordVersion("etcd key /k", []byte(tc.data), testFormat)
		if v != tc.want || (err != nil) != tc.refused {
			t.Errorf("RecordVersion(%s) = %d, %v; want %d, refused=%v", tc.data, v, err, tc.want, tc.refused)
		}
		if tc.refused && !strings.Contains(err.Error(), "etcd key /k") {
			t.Errorf("error %q does not name the key", err)
		}
	}
	if _, err := RecordVersion("k", []byte("{"), testFormat); err == nil {
		t.Error("a record that does not parse was accepted")
	}
}
