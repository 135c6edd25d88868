// Package remotetest runs an in-process S3 emulator for tests: gofakes3 with an in-memory
// backend behind an httptest server on 127.0.0.1, with switches that make it refuse, slow
// down or corrupt requests, and counters of what it served.
//
// The emulator lives as long as the test (t.Cleanup closes it); processes the test starts
// reach it on loopback through Endpoint.
package remotetest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/stromdb/strom/server/remote"
)

// Credentials the emulator's configs carry. gofakes3 does not check signatures, but clients
// sign, so they need keys.
const (
	AccessKey = "strom-test-access"
	SecretKey = "strom-test-secret"
	Region    = "us-east-1"
)

// Emulator is a running S3 emulator with one bucket.
type Emulator struct {
	Bucket  string
	srv     *httptest.Server
	backend *s3mem.Backend

	refuse  atomic.Bool
	corrupt atomic.Bool
	slow    atomic.Int64 // nanoseconds added before every request
	failN   atomic.Int64 // the next failN requests are refused

	requests atomic.Int64
	refused  atomic.Int64
	mu       sync.Mutex
	inflight int
	maxIn    int
}

// Start starts an emulator with bucket "strom"; it stops when the test ends.
func Start(t testing.TB) *Emulator {
	t.Helper()
	e := &Emulator{Bucket: "strom", backend: s3mem.New()}
	if err := e.backend.CreateBucket(e.Bucket); err != nil {
		t.Fatalf("remotetest: create bucket: %v", err)
	}
	faker := gofakes3.New(e.backend, gofakes3.WithIntegrityCheck(true), gofakes3.WithLogger(gofakes3.DiscardLog()))
	e.srv = httptest.NewServer(e.wrap(faker.Server())) // httptest listens on 127.0.0.1
	t.Cleanup(e.srv.Close)
	return e
}

// Endpoint is the emulator's URL, for s3.endpoint.
func (e *Emulator) Endpoint() string { return e.srv.URL }

// Config is a remote.Config for s3://<bucket>/<prefix> on the emulator.
func (e *Emulator) Config(prefix string) remote.Config {
	return remote.Config{DataDir: e.DataDir(prefix), S3: remote.S3Config{
		Endpoint: e.Endpoint(), AccessKey: AccessKey, SecretKey: SecretKey, Region: Region, PathStyleAccess: true,
	}}
}

// DataDir is remote.data.dir for prefix.
func (e *Emulator) DataDir(prefix string) string { return fmt.Sprintf("s3://%s/%s", e.Bucket, prefix) }

// Options are the server options (strom serve's config keys) for s3://<bucket>/<prefix>.
func (e *Emulator) Options(prefix string) map[string]string {
	return map[string]string{
		remote.OptDataDir: e.DataDir(prefix), remote.OptS3Endpoint: e.Endpoint(),
		remote.OptS3AccessKey: AccessKey, remote.OptS3SecretKey: SecretKey,
		remote.OptS3Region: Region, remote.OptS3PathStyle: "true",
	}
}

// Refuse makes every request fail with 503 SlowDown (a store that is down but answers) until
// Refuse(false).
func (e *Emulator) Refuse(on bool) { e.refuse.Store(on) }

// FailNext makes the next n requests fail with 503 SlowDown.
func (e *Emulator) FailNext(n int) { e.failN.Store(int64(n)) }

// Slow delays every request by d (0 turns it off).
func (e *Emulator) Slow(d time.Duration) { e.slow.Store(int64(d)) }

// CorruptUploads flips one byte of every PUT body after the client computed its checksums,
// as a bad network or disk would.
func (e *Emulator) CorruptUploads(on bool) { e.corrupt.Store(on) }

// Requests is how many requests reached the emulator, Refused how many it refused.
func (e *Emulator) Requests() int64 { return e.requests.Load() }
func (e *Emulator) Refused() int64  { return e.refused.Load() }

// MaxInFlight is the most requests the emulator was serving at once.
func (e *Emulator) MaxInFlight() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.maxIn
}

// Keys lists every key in the bucket.
func (e *Emulator) Keys(t testing.TB) []string {
	t.Helper()
	list, err := e.backend.ListBucket(e.Bucket, &gofakes3.Prefix{}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatalf("remotetest: list: %v", err)
	}
	var out []string
	for _, c := range list.Contents {
		out = append(out, c.Key)
	}
	return out
}

// Overwrite replaces key's bytes behind the client's back, keeping its metadata (so a stored
// checksum no longer matches).
func (e *Emulator) Overwrite(t testing.TB, key string, data []byte) {
	t.Helper()
	obj, err := e.backend.GetObject(e.Bucket, key, nil)
	if err != nil {
		t.Fatalf("remotetest: get %s: %v", key, err)
	}
	meta := obj.Metadata
	obj.Contents.Close()
	if _, err := e.backend.PutObject(e.Bucket, key, meta, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatalf("remotetest: put %s: %v", key, err)
	}
}

const slowDown = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>remotetest: refused</Message></Error>`

func (e *Emulator) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		e.mu.Lock()
		e.inflight++
		e.maxIn = max(e.maxIn, e.inflight)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.inflight--
			e.mu.Unlock()
		}()
		if d := time.Duration(e.slow.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		if e.refuse.Load() || e.takeFailure() {
			e.refused.Add(1)
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, slowDown)
			return
		}
		if e.corrupt.Load() && r.Method == http.MethodPut && r.ContentLength > 0 {
			body, err := io.ReadAll(r.Body)
			if err == nil && len(body) > 0 {
				body[len(body)/2] ^= 0xff
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}

func (e *Emulator) takeFailure() bool {
	for {
		n := e.failN.Load()
		if n <= 0 {
			return false
		}
		if e.failN.CompareAndSwap(n, n-1) {
			return true
		}
	}
}
