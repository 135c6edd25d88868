package meta

import (
	"context"
	"errors"
	"log/slog"
	"testing"
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
