package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/remote"
)

// openRemote opens remote.data.dir (docs/tiered-storage.md): the store KV snapshots, and
// tiered log segments, live in. Unset, it is <data dir>/remote, a file store private to the
// node.
func openRemote(ctx context.Context, cfg config.Config, log *slog.Logger) (*remote.Storage, error) {
	rc, err := remote.ConfigFrom(cfg.Raw, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st, err := remote.Open(ctx, rc, log)
	if err != nil {
		return nil, fmt.Errorf("open remote storage: %w", err)
	}
	log.Info("remote storage", "remote.data.dir", st.Root(), "scheme", st.Scheme)
	return st, nil
}
