package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server/config"
)

// TestServerOptionsAtStart starts a node as `strom serve --set ...` would, with a misspelled
// option and allow.create.kv.tables: false. The misspelling is logged as a WARN naming the
// option it resembles (Fluss would ignore it without a word), and primary-key tables are
// refused while log tables are created.
func TestServerOptionsAtStart(t *testing.T) {
	var logs syncBuffer
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	for k, v := range map[string]string{"default.bucket.numbr": "4", "allow.create.kv.tables": "false",
		"bind.listeners": "FLUSS://127.0.0.1:0", "tablet-server.bind.listeners": "FLUSS://127.0.0.1:0"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	n, err := Start(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if want := "option default.bucket.numbr is unknown and is ignored (did you mean default.bucket.number?)"; !strings.Contains(logs.String(), want) ||
		!strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("log lacks the WARN %q:\n%s", want, logs.String())
	}

	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: n.Addr("coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := conn.Admin()
	cols := []fluss.Column{fluss.NewColumn("id", fluss.Int()), fluss.NewColumn("v", fluss.String())}
	err = admin.CreateTable(ctx, fluss.NewTablePath("fluss", "pk"), fluss.TableDescriptor{Schema: fluss.NewSchema(cols, "id"), BucketCount: 1}, false)
	var fe *fluss.Error
	if !errors.As(err, &fe) || fe.Code != fluss.ErrInvalidTable {
		t.Fatalf("primary-key table with allow.create.kv.tables=false: %v, want INVALID_TABLE_EXCEPTION", err)
	}
	if err := admin.CreateTable(ctx, fluss.NewTablePath("fluss", "log"), fluss.TableDescriptor{Schema: fluss.NewSchema(cols), BucketCount: 1}, false); err != nil {
		t.Fatalf("log table: %v", err)
	}
}
