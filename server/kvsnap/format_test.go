package kvsnap

import (
	"errors"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/formatver"
	"github.com/stromdb/strom/server/cluster"
)

func TestDecodeSnapshotChecksTheRecordVersion(t *testing.T) {
	b := cluster.Bucket{TableID: 7, PartitionID: cluster.NoPartition, Bucket: 2}
	key := snapshotKey(b, 4)
	if _, s, err := decodeSnapshot(key, []byte(`{"id":4,"log_offset":10}`)); err != nil || s.ID != 4 {
		t.Fatalf("legacy record (no format_version) = %+v, %v", s, err)
	}
	if _, _, err := decodeSnapshot(key, []byte(`{"id":4,"log_offset":10,"format_version":1}`)); err != nil {
		t.Fatalf("version 1 record: %v", err)
	}
	_, _, err := decodeSnapshot(key, []byte(`{"id":4,"log_offset":10,"format_version":2}`))
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2 record = %v", err)
	}
}
