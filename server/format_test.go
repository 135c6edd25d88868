package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/formatver"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/kvstore"
	"github.com/stromdb/strom/server/meta"
)

// TestStartRefusesDataOfAnUnknownFormatVersion starts a node, stops it, marks first its
// etcd records and then its KV store as written by a newer format version, and checks that
// the node refuses to start each time with an error naming what it refused
// (docs/durability.md, "Versioned formats").
func TestStartRefusesDataOfAnUnknownFormatVersion(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func() error {
		n, err := Start(ctx, cfg, quiet)
		if err == nil {
			return n.Close()
		}
		return err
	}
	if err := start(); err != nil {
		t.Fatalf("first start: %v", err)
	}

	store, err := meta.OpenEmbedded(ctx, filepath.Join(cfg.DataDir, "meta"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	put := func(v string) {
		if _, err := store.Txn(ctx, nil, []meta.Op{meta.Put(meta.FormatKey, []byte(v))}); err != nil {
			t.Fatal(err)
		}
	}
	put(`{"format_version":2}`)
	store.Close()
	err = start()
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), meta.KeyPrefix+meta.FormatKey) {
		t.Fatalf("start with version 2 etcd records = %v", err)
	}

	if store, err = meta.OpenEmbedded(ctx, filepath.Join(cfg.DataDir, "meta"), quiet); err != nil {
		t.Fatal(err)
	}
	put(`{"format_version":1}`)
	store.Close()
	kvDir := filepath.Join(cfg.DataDir, "tablet", "kv")
	if err := formatver.WriteDir(kvDir, kvstore.DirFormat, 2); err != nil {
		t.Fatal(err)
	}
	err = start()
	if !errors.Is(err, formatver.ErrUnsupported) || !strings.Contains(err.Error(), filepath.Join(kvDir, formatver.FileName)) {
		t.Fatalf("start with a version 2 KV store = %v", err)
	}
}
