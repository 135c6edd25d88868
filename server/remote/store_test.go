package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thanos-io/objstore"

	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/remote/remotetest"
)

// kinds opens one store of each kind.
func kinds(t *testing.T, mod func(*remote.Config)) map[string]*remote.Storage {
	t.Helper()
	e := remotetest.Start(t)
	out := map[string]*remote.Storage{}
	for name, cfg := range map[string]remote.Config{
		"file": {DataDir: t.TempDir()},
		"s3":   e.Config("p/q"),
	} {
		if mod != nil {
			mod(&cfg)
		}
		s, err := remote.Open(context.Background(), cfg, nil)
		if err != nil {
			t.Fatalf("Open %s: %v", name, err)
		}
		t.Cleanup(func() { s.Close() })
		out[name] = s
	}
	return out
}

func readAll(t *testing.T, b objstore.Bucket, key string) []byte {
	t.Helper()
	r, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return got
}

func TestRoundTripBothKinds(t *testing.T) {
	ctx := context.Background()
	for kind, s := range kinds(t, nil) {
		t.Run(kind, func(t *testing.T) {
			b := s.Bucket
			data := []byte("hello remote")
			if err := b.Upload(ctx, "kv/t1/b0/a.sst", bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			// A reader that cannot seek is spooled, with the same result.
			if err := b.Upload(ctx, "kv/t1/b0/sub/c", io.MultiReader(strings.NewReader("x"), strings.NewReader("yz"))); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, b, "kv/t1/b0/a.sst"); !bytes.Equal(got, data) {
				t.Fatalf("read %q", got)
			}
			if got := readAll(t, b, "kv/t1/b0/sub/c"); string(got) != "xyz" {
				t.Fatalf("read %q", got)
			}
			r, err := b.GetRange(ctx, "kv/t1/b0/a.sst", 6, 3)
			if err != nil {
				t.Fatal(err)
			}
			part, _ := io.ReadAll(r)
			r.Close()
			if string(part) != "rem" {
				t.Fatalf("range %q", part)
			}
			attrs, err := b.Attributes(ctx, "kv/t1/b0/a.sst")
			if err != nil || attrs.Size != int64(len(data)) {
				t.Fatalf("Attributes = %+v, %v", attrs, err)
			}
			var top, all []string
			if err := b.Iter(ctx, "kv/t1/b0", func(n string) error { top = append(top, n); return nil }); err != nil {
				t.Fatal(err)
			}
			if err := b.Iter(ctx, "kv/", func(n string) error { all = append(all, n); return nil }, objstore.WithRecursiveIter()); err != nil {
				t.Fatal(err)
			}
			slices.Sort(top)
			slices.Sort(all)
			if want := []string{"kv/t1/b0/a.sst", "kv/t1/b0/sub/"}; !slices.Equal(top, want) {
				t.Fatalf("Iter = %q, want %q", top, want)
			}
			if want := []string{"kv/t1/b0/a.sst", "kv/t1/b0/sub/c"}; !slices.Equal(all, want) {
				t.Fatalf("recursive Iter = %q, want %q", all, want)
			}
			if err := b.Delete(ctx, "kv/t1/b0/a.sst"); err != nil {
				t.Fatal(err)
			}
			if ok, err := b.Exists(ctx, "kv/t1/b0/a.sst"); ok || err != nil {
				t.Fatalf("Exists after delete = %v, %v", ok, err)
			}
			_, err = b.Get(ctx, "kv/t1/b0/a.sst")
			if err == nil || !b.IsObjNotFoundErr(err) {
				t.Fatalf("Get of a deleted object: %v (not-found %v)", err, b.IsObjNotFoundErr(err))
			}
		})
	}
}

func TestS3ClientPathAndToken(t *testing.T) {
	e := remotetest.Start(t)
	s, err := remote.Open(context.Background(), e.Config("a/b/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.ClientPath("kv/x.sst"), "s3://strom/a/b/kv/x.sst"; got != want {
		t.Fatalf("ClientPath = %q, want %q", got, want)
	}
	if s.Root() != "s3://strom/a/b" {
		t.Fatalf("Root = %q", s.Root())
	}
	if err := s.Bucket.Upload(context.Background(), "kv/x.sst", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if keys := e.Keys(t); !slices.Contains(keys, "a/b/kv/x.sst") {
		t.Fatalf("keys %q lack the prefixed key", keys)
	}
	tok := s.Token()
	if tok.Scheme != "s3" || tok.AdditionInfo[remote.InfoEndpoint] != e.Endpoint() ||
		tok.AdditionInfo[remote.InfoPathStyle] != "true" || tok.AdditionInfo[remote.InfoEndpointRegion] != remotetest.Region {
		t.Fatalf("token %+v", tok)
	}
	var creds map[string]any
	if err := json.Unmarshal(tok.Token, &creds); err != nil {
		t.Fatalf("token %q: %v", tok.Token, err)
	}
	if v, ok := creds["security_token"]; !ok || v != nil {
		t.Fatalf("security_token must be present and null: %q", tok.Token)
	}
	if creds["access_key_id"] != remotetest.AccessKey || creds["access_key_secret"] != remotetest.SecretKey {
		t.Fatalf("credentials %q", tok.Token)
	}
	cfg := e.Config("a")
	cfg.ClientCredentials = remote.CredentialsNone
	s2, err := remote.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok := s2.Token(); len(tok.Token) != 0 || tok.AdditionInfo[remote.InfoEndpoint] == "" {
		t.Fatalf("credentials none: token %+v", tok)
	}
}

func TestS3MultipartUpload(t *testing.T) {
	e := remotetest.Start(t)
	cfg := e.Config("mp")
	cfg.PartSize = 5 << 20
	s, err := remote.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 12<<20+123) // three parts
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	before := e.Requests()
	if err := s.Bucket.Upload(context.Background(), "big", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	// create + 3 parts + complete, at least; a single PUT would be one request.
	if n := e.Requests() - before; n < 5 {
		t.Fatalf("upload of %d bytes took %d requests: not multipart", len(data), n)
	}
	if got := readAll(t, s.Bucket, "big"); !bytes.Equal(got, data) {
		t.Fatalf("multipart object read back differs (%d bytes)", len(got))
	}
}

func TestS3ChecksumMismatchDetected(t *testing.T) {
	e := remotetest.Start(t)
	s, err := remote.Open(context.Background(), e.Config(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Bucket.Upload(ctx, "obj", strings.NewReader("original bytes")); err != nil {
		t.Fatal(err)
	}
	e.Overwrite(t, "obj", []byte("tampered bytes"))
	r, err := s.Bucket.Get(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	r.Close()
	if !errors.Is(err, remote.ErrChecksumMismatch) {
		t.Fatalf("read of a tampered object: %v, want ErrChecksumMismatch", err)
	}

	// On upload: the store checks Content-MD5 and refuses a body corrupted on the way.
	e.CorruptUploads(true)
	err = s.Bucket.Upload(ctx, "corrupt", bytes.NewReader(bytes.Repeat([]byte("abc"), 1000)))
	e.CorruptUploads(false)
	if err == nil {
		t.Fatal("upload of a body corrupted in flight succeeded")
	}
	if ok, _ := s.Bucket.Exists(ctx, "corrupt"); ok {
		t.Fatal("a refused upload left an object")
	}
}

func TestS3RetriesTransientErrors(t *testing.T) {
	e := remotetest.Start(t)
	s, err := remote.Open(context.Background(), e.Config(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e.FailNext(3)
	if err := s.Bucket.Upload(ctx, "obj", strings.NewReader("payload")); err != nil {
		t.Fatalf("upload through 3 refusals: %v", err)
	}
	e.FailNext(2)
	if got := readAll(t, s.Bucket, "obj"); string(got) != "payload" {
		t.Fatalf("read %q", got)
	}
	if e.Refused() != 5 {
		t.Fatalf("refused %d requests, want 5", e.Refused())
	}

	// A store that stays down fails the operation once the retries are spent.
	cfg := e.Config("")
	cfg.MaxRetries = 2
	s2, err := remote.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Refuse(true)
	before := e.Refused()
	err = s2.Bucket.Upload(ctx, "obj2", strings.NewReader("x"))
	e.Refuse(false)
	if err == nil {
		t.Fatal("upload to a refusing store succeeded")
	}
	if n := e.Refused() - before; n != 3 {
		t.Fatalf("%d attempts with MaxRetries 2, want 3", n)
	}
}

func TestS3ConcurrencyBound(t *testing.T) {
	e := remotetest.Start(t)
	cfg := e.Config("")
	cfg.MaxInflight = 2
	s, err := remote.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Slow(50 * time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			errs <- s.Bucket.Upload(context.Background(), "o/"+string(rune('a'+i)), strings.NewReader("data"))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m := e.MaxInFlight(); m > 2 {
		t.Fatalf("%d requests in flight at once, bound is 2", m)
	}
}

func TestFileUploadAtomic(t *testing.T) {
	dir := t.TempDir()
	s, err := remote.Open(context.Background(), remote.Config{DataDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Bucket.Upload(ctx, "a/obj", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	// An upload whose reader fails midway leaves the old object and no temporary file.
	failing := io.MultiReader(strings.NewReader("new partial"), errReader{})
	if err := s.Bucket.Upload(ctx, "a/obj", failing); err == nil {
		t.Fatal("upload from a failing reader succeeded")
	}
	if got := readAll(t, s.Bucket, "a/obj"); string(got) != "old" {
		t.Fatalf("after a failed upload the object reads %q", got)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "a"))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries after a failed upload, want 1", len(ents))
	}
	// A temporary file left by a crash is no object: listings skip it.
	if err := os.WriteFile(filepath.Join(dir, "a", ".strom-tmp-obj-123"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	s.Bucket.Iter(ctx, "a", func(n string) error { names = append(names, n); return nil })
	if !slices.Equal(names, []string{"a/obj"}) {
		t.Fatalf("Iter = %q", names)
	}
	// A reader sees either the old or the new object, never a prefix of the new one.
	big := bytes.Repeat([]byte("n"), 1<<20)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 5 {
			if err := s.Bucket.Upload(ctx, "a/obj", bytes.NewReader(big)); err != nil {
				t.Error(err)
			}
		}
	})
	for range 50 {
		got := readAll(t, s.Bucket, "a/obj")
		if string(got) != "old" && !bytes.Equal(got, big) {
			t.Fatalf("reader saw %d bytes: a partial object", len(got))
		}
	}
	wg.Wait()
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk gone") }

func TestFileConcurrencyBound(t *testing.T) {
	s, err := remote.Open(context.Background(), remote.Config{DataDir: t.TempDir(), MaxInflight: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.Bucket.Upload(ctx, "x", strings.NewReader("x"))
	r, err := s.Bucket.Get(ctx, "x") // holds the only slot until closed
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Bucket.Exists(short, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second operation with the slot taken: %v, want to wait for it", err)
	}
	r.Close()
	if ok, err := s.Bucket.Exists(ctx, "x"); !ok || err != nil {
		t.Fatalf("after Close: %v, %v", ok, err)
	}
}

func TestConfigFrom(t *testing.T) {
	c, err := remote.ConfigFrom(map[string]string{
		"remote.data.dir": "s3://b/p", "s3.endpoint": "http://127.0.0.1:9000", "s3.access-key": "ak",
		"s3.secret-key": "sk", "s3.region": "eu-west-1", "s3.path-style-access": "true",
		"remote.storage.max-inflight-operations": "4", "remote.storage.max-retries": "0",
		"remote.storage.multipart-part-size": "8mb", "remote.storage.client-credentials": "none",
	}, "/data")
	if err != nil {
		t.Fatal(err)
	}
	want := remote.Config{DataDir: "s3://b/p", S3: remote.S3Config{Endpoint: "http://127.0.0.1:9000", AccessKey: "ak",
		SecretKey: "sk", Region: "eu-west-1", PathStyleAccess: true}, MaxInflight: 4, MaxRetries: -1, PartSize: 8 << 20,
		ClientCredentials: remote.CredentialsNone}
	if c != want {
		t.Fatalf("ConfigFrom = %+v, want %+v", c, want)
	}
	if c, _ := remote.ConfigFrom(nil, "/data"); c.DataDir != "/data/remote" {
		t.Fatalf("default remote.data.dir %q", c.DataDir)
	}
	for k, v := range map[string]string{"s3.path-style-access": "yes", "remote.storage.max-inflight-operations": "0",
		"remote.storage.multipart-part-size": "1mb", "remote.storage.client-credentials": "sts", "remote.storage.max-retries": "-1"} {
		if _, err := remote.ConfigFrom(map[string]string{k: v}, "/d"); err == nil {
			t.Errorf("%s: %s accepted", k, v)
		}
	}
}

func TestOpenS3Errors(t *testing.T) {
	e := remotetest.Start(t)
	ctx := context.Background()
	cfg := e.Config("")
	cfg.DataDir = "s3://missing-bucket/x"
	if _, err := remote.Open(ctx, cfg, nil); err == nil {
		t.Error("Open of a missing bucket succeeded")
	}
	cfg = e.Config("")
	cfg.S3.SecretKey = ""
	if _, err := remote.Open(ctx, cfg, nil); err == nil {
		t.Error("Open with an access key and no secret key succeeded")
	}
	cfg = e.Config("")
	cfg.DataDir = "s3:///x"
	if _, err := remote.Open(ctx, cfg, nil); err == nil {
		t.Error("Open of s3:// without a bucket succeeded")
	}
}

// TestOpenS3DuringAnOutage: a store that does not answer does not stop Open (a node must start
// during an outage); operations fail while it lasts and work once it is back.
func TestOpenS3DuringAnOutage(t *testing.T) {
	e := remotetest.Start(t)
	cfg := e.Config("x")
	cfg.MaxRetries = -1
	e.Refuse(true)
	s, err := remote.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Open during an outage: %v", err)
	}
	if err := s.Bucket.Upload(context.Background(), "a", strings.NewReader("a")); err == nil {
		t.Fatal("upload during the outage succeeded")
	}
	e.Refuse(false)
	if err := s.Bucket.Upload(context.Background(), "a", strings.NewReader("a")); err != nil {
		t.Fatalf("upload after the outage: %v", err)
	}
}

// TestS3UploadFromAnOffset: a reader positioned past its start uploads what is left of it
// (Upload reads it twice, for the checksum and to send it), also through a retry.
func TestS3UploadFromAnOffset(t *testing.T) {
	e := remotetest.Start(t)
	s, err := remote.Open(context.Background(), e.Config(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := seekOnly{strings.NewReader("skipped|uploaded")}
	r.Seek(int64(len("skipped|")), io.SeekStart)
	e.FailNext(1)
	if err := s.Bucket.Upload(context.Background(), "o", r); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s.Bucket, "o"); string(got) != "uploaded" {
		t.Fatalf("uploaded %q", got)
	}
}

// seekOnly hides every method but Read and Seek (no ReaderAt, no WriterTo).
type seekOnly struct{ rs io.ReadSeeker }

func (s seekOnly) Read(p []byte) (int, error)                { return s.rs.Read(p) }
func (s seekOnly) Seek(off int64, whence int) (int64, error) { return s.rs.Seek(off, whence) }
