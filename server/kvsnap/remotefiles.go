package kvsnap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/thanos-io/objstore"

	"github.com/stromdb/strom/internal/rocksdbdir"
	"github.com/stromdb/strom/server/cluster"
)

// Snapshot files in remote storage (docs/kv-snapshots.md, "Layout"). Every node reads and
// writes them through remote.Storage under the same keys, so nothing but the store is shared:
// a snapshot is built in a local directory (Options.LocalDir), its new files are uploaded, and
// only then is its record committed. A reader downloads what it needs to local disk.
//
// Keys of a bucket, relative to remote.data.dir:
//
//	kv/table-<id>/[partition-<id>/]bucket-<n>/shared/NNNNNN.sst
//	kv/table-<id>/[partition-<id>/]bucket-<n>/snap-<id>[-e<epoch>]/{MANIFEST-NNNNNN,CURRENT}

// remoteError is a failure of remote storage itself (after the store's retries): an outage,
// not a problem of one snapshot. A pass that meets one stops (SnapshotAll).
type remoteError struct{ err error }

func (e remoteError) Error() string { return e.err.Error() }
func (e remoteError) Unwrap() error { return e.err }

func isRemote(err error) bool {
	var r remoteError
	return errors.As(err, &r)
}

// bucketKey is the key prefix of a bucket's files (no trailing slash).
func bucketKey(b cluster.Bucket) string {
	k := fmt.Sprintf("kv/table-%d", b.TableID)
	if b.PartitionID != cluster.NoPartition {
		k += fmt.Sprintf("/partition-%d", b.PartitionID)
	}
	return k + fmt.Sprintf("/bucket-%d", b.Bucket)
}

func tableKey(b cluster.Bucket, n uint64) string {
	return path.Join(bucketKey(b), sharedDirName, tableName(n))
}

// localBucketDir is the bucket's directory under the local scratch directory.
func (m *Manager) localBucketDir(b cluster.Bucket) string {
	return filepath.Join(m.opts.LocalDir, filepath.FromSlash(bucketKey(b)))
}

// uploadFile uploads the local file at src under key.
func uploadFile(ctx context.Context, bkt objstore.Bucket, key, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := bkt.Upload(ctx, key, f); err != nil {
		return remoteError{fmt.Errorf("kvsnap: upload %s: %w", key, err)}
	}
	return nil
}

// fetchTables makes every table of tables present in the local directory dir, downloading the
// ones missing or of the wrong size. A file appears under its name only whole (written to a
// temporary name, then renamed); a download is checked against the checksum the store keeps
// (remote.Storage: S3's CRC32C on a whole-object read).
func fetchTables(ctx context.Context, bkt objstore.Bucket, b cluster.Bucket, tables []rocksdbdir.Table, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range tables {
		dst := filepath.Join(dir, tableName(t.Number))
		if fi, err := os.Stat(dst); err == nil && uint64(fi.Size()) == t.Size {
			continue
		}
		if err := download(ctx, bkt, tableKey(b, t.Number), dst); err != nil {
			return err
		}
		if fi, err := os.Stat(dst); err != nil || uint64(fi.Size()) != t.Size {
			os.Remove(dst)
			return fmt.Errorf("kvsnap: table %s has %d bytes, the snapshot lists %d", tableKey(b, t.Number), sizeOf(fi), t.Size)
		}
	}
	return nil
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

func download(ctx context.Context, bkt objstore.Bucket, key, dst string) error {
	r, err := bkt.Get(ctx, key)
	if err != nil {
		if bkt.IsObjNotFoundErr(err) {
			return fmt.Errorf("kvsnap: download %s: %w", key, err)
		}
		return remoteError{fmt.Errorf("kvsnap: download %s: %w", key, err)}
	}
	defer r.Close()
	f, err := os.CreateTemp(filepath.Dir(dst), ".download-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("kvsnap: download %s: %w", key, err)
	}
	return nil
}

// deletePrefix deletes every object under prefix (a directory of the layout).
func deletePrefix(ctx context.Context, bkt objstore.Bucket, prefix string) error {
	var keys []string
	err := bkt.Iter(ctx, strings.TrimSuffix(prefix, "/")+"/", func(name string) error {
		keys = append(keys, name)
		return nil
	}, objstore.WithRecursiveIter())
	if err != nil {
		return remoteError{fmt.Errorf("kvsnap: list %s: %w", prefix, err)}
	}
	var errs []error
	for _, k := range keys {
		if err := bkt.Delete(ctx, k); err != nil && !bkt.IsObjNotFoundErr(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listDir lists the entries directly under prefix: objects by full key, subdirectories as
// "prefix/name/".
func listDir(ctx context.Context, bkt objstore.Bucket, prefix string) ([]string, error) {
	var out []string
	err := bkt.Iter(ctx, strings.TrimSuffix(prefix, "/")+"/", func(name string) error {
		out = append(out, name)
		return nil
	})
	if err != nil {
		return nil, remoteError{fmt.Errorf("kvsnap: list %s: %w", prefix, err)}
	}
	return out, nil
}
