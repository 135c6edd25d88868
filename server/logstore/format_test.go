package logstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/formatver"
)

func TestOpenRecordsTheFormatAndRefusesAnUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, formatver.FileName)); err != nil {
		t.Fatalf("no format file after Open: %v", err)
	}
	if err := formatver.WriteDir(dir, DirFormat, 2); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	_, err = Open(context.Background(), dir, Options{})
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), filepath.Join(dir, formatver.FileName)) {
		t.Fatalf("Open of a version 2 log = %v", err)
	}
	after, _ := os.ReadDir(dir)
	if len(before) != len(after) {
		t.Fatalf("refused Open changed the directory: %d files before, %d after", len(before), len(after))
	}
}

func TestOpenReadsALegacyLogAsVersionOne(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, formatver.FileName)); err != nil {
		t.Fatal(err)
	}
	l, err = Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("Open of a log written before formats were versioned: %v", err)
	}
	_ = l.Close()
	if v, err := formatver.OpenDir(dir, DirFormat); err != nil || v != 1 {
		t.Fatalf("format after reopening = %d, %v", v, err)
	}
}
