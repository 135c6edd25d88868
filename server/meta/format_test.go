package meta

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

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
