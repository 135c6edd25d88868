// Package remote is Strom's remote storage: the tier below the tablet servers' disks where
// tiered log segments and KV snapshots live (remote.data.dir). It is one interface over two
// kinds of store, a local or shared file system (a path or a file:// URL) and S3-compatible
// object storage (s3://bucket/prefix), both as a thanos-io/objstore Bucket.
//
// Invariants every caller may rely on:
//   - Keys are slash-separated paths relative to remote.data.dir; the same key names the same
//     object on every node of a cluster (for S3 there is nothing to share but the bucket).
//   - An uploaded object is visible only whole: a crash during Upload leaves either nothing
//     or an object that a later listing shows but no manifest names (an orphan), never a
//     partial object under a name a manifest points at. Callers commit an object by naming
//     it in a manifest after Upload returns, and remove orphans by listing.
//   - ClientPath(key) is the location an official client opens for that object, in the scheme
//     GET_FILESYSTEM_SECURITY_TOKEN announces.
//
// See docs/tiered-storage.md.
package remote

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"
)

// Config is remote storage as configured, with Fluss's option names.
type Config struct {
	// DataDir is remote.data.dir: a path, a file:// URL or an s3://bucket/prefix URL.
	DataDir string
	// S3 holds the s3.* options; used only for an s3:// DataDir.
	S3 S3Config
	// MaxInflight bounds the operations in flight on the store at once (an upload, a delete,
	// a listing, a read until its reader is closed); 0 means 16.
	MaxInflight int
	// MaxRetries is how often a request that failed transiently (a network error, 5xx, 429,
	// SlowDown) is retried, with exponential backoff and jitter, before the operation fails;
	// 0 means 10, negative means none. S3 only: a local file system has no transient errors.
	MaxRetries int
	// PartSize is the part size of multipart uploads: larger objects are uploaded in parts
	// of this size; 0 means 16 MiB, at least 5 MiB (S3's minimum). An upload holds one part in
	// memory, so MaxInflight × PartSize bounds the memory uploads take.
	PartSize int64
	// ClientCredentials is what GET_FILESYSTEM_SECURITY_TOKEN hands to clients of an S3
	// store; "" means CredentialsStatic.
	ClientCredentials ClientCredentials
}

// S3Config holds Fluss's s3.* options (website/docs/maintenance/filesystems/s3.md upstream).
type S3Config struct {
	Endpoint        string // s3.endpoint
	AccessKey       string // s3.access-key
	SecretKey       string // s3.secret-key
	Region          string // s3.region
	PathStyleAccess bool   // s3.path-style-access
}

// Storage is an opened remote store.
type Storage struct {
	// Bucket holds the objects, keyed relative to the configured root.
	Bucket objstore.Bucket
	// Scheme is "file" or "s3".
	Scheme string
	// root is the configured location as clients address it: an absolute path for file
	// stores, s3://bucket/prefix for S3.
	root string
	cfg  Config
}

// Open opens the store cfg names. For S3 it checks that the bucket exists: a store that
// answers that it does not, or refuses the keys, fails Open; one that does not answer (after
// the retries) is logged and Open succeeds, so a node starts during an outage.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Storage, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	v := strings.TrimSpace(cfg.DataDir)
	if v == "" {
		return nil, fmt.Errorf("remote: remote.data.dir is empty")
	}
	scheme, rest := "file", v
	if i := strings.Index(v, "://"); i >= 0 {
		u, err := url.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("remote: remote.data.dir %q: %w", v, err)
		}
		scheme, rest = strings.ToLower(u.Scheme), u.Path
		if scheme == "file" && u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("remote: remote.data.dir %q: a file URL names no host", v)
		}
	}
	switch scheme {
	case "file":
		dir, err := filepath.Abs(rest)
		if err != nil {
			return nil, fmt.Errorf("remote: remote.data.dir %q: %w", v, err)
		}
		b, err := filesystem.NewBucket(dir)
		if err != nil {
			return nil, fmt.Errorf("remote: open %s: %w", dir, err)
		}
		fb := &fileBucket{Bucket: b, root: dir}
		return &Storage{Bucket: newLimitBucket(fb, cfg.MaxInflight), Scheme: "file", root: dir, cfg: cfg}, nil
	case "s3", "s3a":
		u, _ := url.Parse(v)
		b, err := newS3Bucket(ctx, cfg, u.Host, strings.Trim(u.Path, "/"), log)
		if err != nil {
			return nil, err
		}
		root := "s3://" + u.Host
		if p := strings.Trim(u.Path, "/"); p != "" {
			root += "/" + p
		}
		return &Storage{Bucket: newLimitBucket(b, cfg.MaxInflight), Scheme: "s3", root: root, cfg: cfg}, nil
	default:
		return nil, fmt.Errorf("remote: remote.data.dir %q: scheme %q is not supported (file system paths, file:// and s3:// are)", v, scheme)
	}
}

// ClientPath is where an official client opens the object at key: an absolute path for a file
// store, s3://bucket/prefix/key for S3.
func (s *Storage) ClientPath(key string) string {
	if s.Scheme == "file" {
		return filepath.Join(s.root, filepath.FromSlash(key))
	}
	return strings.TrimSuffix(s.root, "/") + "/" + strings.TrimPrefix(path.Clean("/"+key), "/")
}

// Root is the configured location as clients address it (ClientPath of the empty key).
func (s *Storage) Root() string { return s.root }

// SecurityToken is what GET_FILESYSTEM_SECURITY_TOKEN answers: the scheme and the properties
// (the response's addition_info) a client needs to open ClientPath locations. A file store
// needs none. The credentials themselves are in Token.
func (s *Storage) SecurityToken() (scheme string, props map[string]string) {
	t := s.Token()
	return t.Scheme, t.AdditionInfo
}

// Close releases the store's connections.
func (s *Storage) Close() error { return s.Bucket.Close() }
