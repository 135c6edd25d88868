package meta

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestEmbeddedStoreSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenEmbedded(ctx, dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ok, err := s.Txn(ctx, []Cond{{Key: "databases/fluss", Exists: false}}, []Op{Put("databases/fluss", []byte("{}"))})
	if err != nil || !ok {
		t.Fatalf("first create: ok=%v err=%v", ok, err)
	}
	ok, err = s.Txn(ctx, []Cond{{Key: "databases/fluss", Exists: false}}, []Op{Put("databases/fluss", []byte("x"))})
	if err != nil || ok {
		t.Fatalf("second create must fail its condition: ok=%v err=%v", ok, err)
	}
	for want := int64(0); want < 3; want++ {
		if got, err := s.NextID(ctx, "table"); err != nil || got != want {
			t.Fatalf("NextID = %d, %v; want %d", got, err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenEmbedded(ctx, dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.Get(ctx, "databases/fluss")
	if err != nil || string(v) != "{}" {
		t.Fatalf("after restart Get = %q, %v", v, err)
	}
	if got, _ := s.NextID(ctx, "table"); got != 3 {
		t.Fatalf("counter after restart = %d, want 3", got)
	}
	// AddID hands out ranges of the same counter NextID steps: [4, 103], then 104.
	if got, err := s.AddID(ctx, "table", 100); err != nil || got != 4 {
		t.Fatalf("AddID(100) = %d, %v; want 4", got, err)
	}
	if got, _ := s.NextID(ctx, "table"); got != 104 {
		t.Fatalf("NextID after AddID = %d, want 104", got)
	}
	if _, err := s.AddID(ctx, "table", 0); err == nil {
		t.Fatal("AddID(0) accepted")
	}
	if _, err := s.Get(ctx, "databases/missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := s.Txn(ctx, nil, []Op{DeletePrefix("databases/")}); err != nil {
		t.Fatal(err)
	}
	kvs, _ := s.List(ctx, "databases/")
	if len(kvs) != 0 {
		t.Fatalf("prefix delete left %v", kvs)
	}
}

// tcpListenInodes returns the socket inodes of this process's listening TCP sockets.
func tcpListenInodes(t *testing.T) map[string]bool {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	out := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && mine[f[9]] { // state LISTEN
				out[f[9]] = true
			}
		}
	}
	return out
}

func TestEmbeddedEtcdIsReachableOnlyByThisUser(t *testing.T) {
	before := tcpListenInodes(t)
	dir := t.TempDir()
	s, err := OpenEmbedded(context.Background(), filepath.Join(dir, "meta"), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for inode := range tcpListenInodes(t) {
		if !before[inode] {
			t.Errorf("the embedded etcd listens on a TCP port (socket inode %s)", inode)
		}
	}
	for _, p := range s.embedded.Peers {
		if n := p.Listener.Addr().Network(); n != "unix" {
			t.Errorf("peer listener on %s", n)
		}
	}
	for _, c := range s.embedded.Clients {
		if n := c.Addr().Network(); n != "unix" {
			t.Errorf("client listener on %s", n)
		}
	}
	sockDir := filepath.Join(dir, "meta", "sock")
	if fi, err := os.Stat(sockDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v %v, want mode 0700", fi.Mode(), err)
	}
	for _, name := range []string{"peer", "client"} {
		fi, err := os.Stat(filepath.Join(sockDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s socket mode %v, want a socket with 0600", name, fi.Mode())
		}
	}
	if _, err := s.Txn(context.Background(), nil, []Op{Put("k", []byte("v"))}); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedEtcdRefusesToStartWithoutSpace(t *testing.T) {
	orig := freeBytes
	freeBytes = func(string) (uint64, error) { return 40 << 20, nil }
	defer func() { freeBytes = orig }()
	_, err := OpenEmbedded(context.Background(), t.TempDir(), slog.Default())
	if err == nil || !strings.Contains(err.Error(), "40 MiB free") || !strings.Contains(err.Error(), "at least 128 MiB") {
		t.Fatalf("got %v, want a clear not-enough-space error", err)
	}
}

type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

func (h *recordingHandler) find(level slog.Level, msg string) *slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.records {
		if h.records[i].Level == level && strings.Contains(h.records[i].Message, msg) {
			return &h.records[i]
		}
	}
	return nil
}

func TestEtcdFatalErrorIsReportedInsteadOfExiting(t *testing.T) {
	var h recordingHandler
	s, err := OpenEmbedded(context.Background(), t.TempDir(), slog.New(&h))
	if err != nil {
		t.Fatal(err)
	}
	s.zlog.Warn("slow fdatasync", zap.Duration("took", time.Second))
	if h.find(slog.LevelWarn, "etcd: slow fdatasync") == nil {
		t.Error("etcd warning not logged")
	}
	// What etcd's raft loop does when the disk is full.
	returned := make(chan bool, 1)
	go func() {
		defer func() { returned <- false }()
		s.zlog.Fatal("failed to save Raft hard state and entries", zap.Error(syscall.ENOSPC))
		returned <- true
	}()
	if <-returned {
		t.Fatal("etcd's Fatal returned to its caller")
	}
	select {
	case <-s.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("the fatal error was not reported")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Err() = %v", err)
	}
	if h.find(slog.LevelError, "etcd: failed to save Raft hard state") == nil {
		t.Error("the fatal entry was not logged")
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "metadata store failed") {
		t.Fatalf("Close after a failure: %v", err)
	}
}
