package kvstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/formatver"
)

func TestOpenRefusesAnUnknownKVFormatVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := formatver.WriteDir(dir, DirFormat, 3); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Logger: discard()})
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), "strom-kv format version 3") {
		t.Fatalf("Open of a version 3 KV store = %v", err)
	}
}
