package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/stromdb/strom/internal/formatver"
)

func TestCheckFormatRecordsVersionOneAndRefusesAnUnknownVersion(t *testing.T) {
	ctx := context.Background()
	s, err := OpenEmbedded(ctx, t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := CheckFormat(ctx, s); err != nil {
		t.Fatalf("CheckFormat of a cluster without a format key: %v", err)
	}
	v, err := s.Get(ctx, FormatKey)
	if err != nil || !strings.Contains(string(v), `"format_version":1`) {
		t.Fatalf("format key = %s, %v", v, err)
	}
	if err := CheckFormat(ctx, s); err != nil {
		t.Fatalf("CheckFormat of a version 1 cluster: %v", err)
	}
	if _, err := s.Txn(ctx, nil, []Op{Put(FormatKey, []byte(`{"format_version":5}`))}); err != nil {
		t.Fatal(err)
	}
	err = CheckFormat(ctx, s)
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), KeyPrefix+FormatKey) || !strings.Contains(err.Error(), "version 5") {
		t.Fatalf("CheckFormat of a version 5 cluster = %v", err)
	}
}

// leaderChangingStore fails its first failures Gets as etcd does during an election.
type leaderChangingStore struct {
	Store
	failures int
	gets     int
}

func (s *leaderChangingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets++
	if s.gets <= s.failures {
		return nil, fmt.Errorf("meta get %s: %w", key, rpctypes.ErrLeaderChanged)
	}
	return s.Store.Get(ctx, key)
}

// A starting member's first read can meet an etcd election (a new cluster under load):
// CheckFormat retries it within its bound, and gives up with the error after the bound.
func TestCheckFormatRetriesAnElectionInProgress(t *testing.T) {
	ctx := context.Background()
	s, err := OpenEmbedded(ctx, t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	oldFor, oldInterval := formatRetryFor, formatRetryInterval
	defer func() { formatRetryFor, formatRetryInterval = oldFor, oldInterval }()
	formatRetryInterval = time.Millisecond
	flaky := &leaderChangingStore{Store: s, failures: 3}
	if err := CheckFormat(ctx, flaky); err != nil {
		t.Fatalf("CheckFormat through 3 leader changes: %v", err)
	}
	if flaky.gets != 4 {
		t.Fatalf("%d Gets, want 4 (3 failed, then the read)", flaky.gets)
	}
	formatRetryFor = 20 * time.Millisecond
	always := &leaderChangingStore{Store: s, failures: 1 << 30}
	if err := CheckFormat(ctx, always); !errors.Is(err, rpctypes.ErrLeaderChanged) {
		t.Fatalf("CheckFormat while etcd never settles = %v, want the leader-changed error", err)
	}
}
