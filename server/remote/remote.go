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

// Open opens the store cfg names.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Storage, error) {
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
		return &Storage{Bucket: b, Scheme: "file", root: dir, cfg: cfg}, nil
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
// a client needs to open ClientPath locations. A file store needs none.
func (s *Storage) SecurityToken() (scheme string, props map[string]string) {
	return s.Scheme, nil
}

// Close releases the store's connections.
func (s *Storage) Close() error { return s.Bucket.Close() }
