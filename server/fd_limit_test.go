package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/config"
)

// TestListenerSurvivesFileDescriptorExhaustion runs out of file descriptors (a lowered
// RLIMIT_NOFILE, in a child process) while a client connects: the accept fails with EMFILE,
// is logged, and once descriptors are free again the waiting client is served.
func TestListenerSurvivesFileDescriptorExhaustion(t *testing.T) {
	if os.Getenv("STROM_FD_EXHAUSTION_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestListenerSurvivesFileDescriptorExhaustion$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STROM_FD_EXHAUSTION_CHILD=1", "STROM_TEST_TMP="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	var logs syncBuffer
	cfg := config.Default()
	cfg.DataDir = os.Getenv("STROM_TEST_TMP")
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	n, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	addr := n.Addr("coordinator")

	fds, _ := os.ReadDir("/proc/self/fd")
	limit := uint64(len(fds) + 64)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Skip("cannot lower RLIMIT_NOFILE:", err)
	}
	// Use up every descriptor.
	var filler []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		filler = append(filler, f)
	}
	// Free one for the client's socket: the server's accept has none left.
	filler[len(filler)-1].Close()
	filler = filler[:len(filler)-1]
	served := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := wire.Dial(ctx, addr, wire.ClientConfig{})
		if err == nil {
			c.Close()
		}
		served <- err
	}()
	for !strings.Contains(logs.String(), "accept failed") {
		select {
		case err := <-served:
			t.Fatalf("client finished (%v) before the server ran out of descriptors", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, f := range filler {
		f.Close()
	}
	if err := <-served; err != nil {
		t.Fatalf("client not served after descriptors were freed: %v\nlog:\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "too many open files") {
		t.Fatalf("EMFILE not logged:\n%s", logs.String())
	}
}

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
