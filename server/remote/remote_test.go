package remote

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"
)

func TestOpenFileStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, dataDir := range []string{dir, "file://" + dir} {
		s, err := Open(ctx, Config{DataDir: dataDir}, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", dataDir, err)
		}
		if err := s.Bucket.Upload(ctx, "log/a/b.log", bytes.NewReader([]byte("hello"))); err != nil {
			t.Fatal(err)
		}
		r, err := s.Bucket.Get(ctx, "log/a/b.log")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != "hello" {
			t.Fatalf("read %q", got)
		}
		if want := filepath.Join(dir, "log", "a", "b.log"); s.ClientPath("log/a/b.log") != want {
			t.Fatalf("ClientPath = %q, want %q", s.ClientPath("log/a/b.log"), want)
		}
		if scheme, _ := s.SecurityToken(); scheme != "file" {
			t.Fatalf("scheme %q", scheme)
		}
	}
}

func TestOpenRefusesUnknownSchemes(t *testing.T) {
	for _, v := range []string{"", "hdfs://nn/x", "oss://b/x", "file://otherhost/x"} {
		if _, err := Open(context.Background(), Config{DataDir: v}, nil); err == nil {
			t.Errorf("Open(%q) succeeded", v)
		}
	}
}
