package meta

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
)

// etcd's storage-version monitor races the first term commit of a new single member and logs
// an ERROR that fixes itself; it is demoted so that a first start is quiet, while other etcd
// errors still reach the log.
func TestEtcdStartupRaceIsQuiet(t *testing.T) {
	var buf bytes.Buffer
	var closing atomic.Bool
	lg := etcdLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), &closing, func(error) {})
	lg.Error("failed to update storage version", zap.String("cluster-version", "3.7.0"),
		zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	lg.Warn("Failed to detect schema version", zap.Error(errors.New("missing term information")))
	if buf.Len() != 0 {
		t.Fatalf("startup race logged: %s", buf.String())
	}
	lg.Error("failed to update storage version", zap.Error(errors.New("disk I/O error")))
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "disk I/O error") {
		t.Fatalf("a real etcd error was not logged: %q", buf.String())
	}
}
