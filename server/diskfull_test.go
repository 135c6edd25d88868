package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/config"
)

// TestMetadataDiskFullStopsTheNode fills a small tmpfs under the data directory until the
// embedded etcd cannot commit: the node must log it, stop, and say why — not exit the
// process silently (etcd's own reaction). It needs to mount a tmpfs, so it runs as root only.
func TestMetadataDiskFullStopsTheNode(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a file system")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=160m"); err != nil {
		t.Skip("cannot mount a tmpfs (needs root):", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })

	var logs syncBuffer
	cfg := config.Default()
	cfg.DataDir = dir + "/data"
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	n, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := wire.Dial(context.Background(), n.Addr("coordinator"), wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Leave the file system full.
	filler, err := os.Create(dir + "/filler")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	for len(chunk) > 1 {
		chunk = chunk[:len(chunk)/2]
		for {
			if _, err := filler.Write(chunk); err != nil {
				break
			}
		}
	}
	filler.Close()

	for i := 0; ; i++ {
		select {
		case <-n.Failed():
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := c.Call(ctx, wire.CreateDatabase, &flusspb.CreateDatabaseRequest{DatabaseName: proto.String(fmt.Sprintf("db_%d_%0150d", i, 0)), IgnoreIfExists: proto.Bool(false)}, &flusspb.CreateDatabaseResponse{})
			cancel()
			if err == nil && i < 100000 {
				continue
			}
			if err != nil && !errors.Is(err, wire.ErrConnClosed) && !errors.Is(err, io.EOF) {
				t.Logf("CREATE_DATABASE %d: %v", i, err)
			}
		}
		break
	}
	select {
	case <-n.Failed():
	case <-time.After(30 * time.Second):
		t.Fatalf("the node did not report the metadata store's failure; log:\n%s", logs.String())
	}
	err = n.Close()
	if err == nil || !strings.Contains(err.Error(), "metadata store failed") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Close after the failure: %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "shutting down: the metadata store failed") {
		t.Fatalf("no shutdown line in the log:\n%s", out)
	}
}
