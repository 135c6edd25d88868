package tablet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stromdb/strom/server/cluster"
)

// RemoveStrayReplicas deletes the copies of buckets this server keeps on disk but no longer
// holds: a server that was down while its replicas moved elsewhere, or while a table or
// partition was dropped, comes back with their directories (and, for primary-key buckets,
// their rows in the shared Pebble store), which no state would ever tell it to delete, since
// a running server drops a replica only when a state it applies stops listing it.
//
// stray decides from the cluster state loaded at one revision; a bucket this server has open
// is never removed, whatever stray says, so a replica opened after that revision is safe.
// It returns the buckets removed. Only directories of the layout bucketDir writes
// (table-<id>[/partition-<id>]/bucket-<n>) are considered; anything else is left alone.
func (s *replicaManager) RemoveStrayReplicas(ctx context.Context, stray func(cluster.Bucket) bool) ([]cluster.Bucket, error) {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.closed {
		return nil, errors.New("tablet server closed")
	}
	found, err := bucketDirsOnDisk(s.opts.DataDir)
	if err != nil {
		return nil, err
	}
	var removed []cluster.Bucket
	var errs []error
	for _, b := range found {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if s.hosted(b) != nil || !stray(b) {
			continue
		}
		if s.kv != nil {
			if err := s.kv.DropBucket(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", b, err))
				continue // keep the directory: the rows are still there
			}
		}
		if err := os.RemoveAll(bucketDir(s.opts.DataDir, b)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b, err))
			continue
		}
		removed = append(removed, b)
		s.log.Info("removed the copy of a bucket this server no longer holds", "bucket", b)
	}
	removeEmptyTableDirs(s.opts.DataDir, removed)
	return removed, errors.Join(errs...)
}

// bucketDirsOnDisk lists the buckets that have a directory under root, in bucketDir's layout.
func bucketDirsOnDisk(root string) ([]cluster.Bucket, error) {
	tables, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	var out []cluster.Bucket
	for _, te := range tables {
		tableID, ok := numbered(te, "table-")
		if !ok {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, te.Name()))
		if err != nil {
			return nil, fmt.Errorf("list replicas: %w", err)
		}
		for _, e := range entries {
			if n, ok := numbered(e, "bucket-"); ok && n <= 1<<31-1 {
				out = append(out, cluster.Bucket{TableID: tableID, PartitionID: cluster.NoPartition, Bucket: int32(n)})
				continue
			}
			partitionID, ok := numbered(e, "partition-")
			if !ok {
				continue
			}
			buckets, err := os.ReadDir(filepath.Join(root, te.Name(), e.Name()))
			if err != nil {
				return nil, fmt.Errorf("list replicas: %w", err)
			}
			for _, be := range buckets {
				if n, ok := numbered(be, "bucket-"); ok && n <= 1<<31-1 {
					out = append(out, cluster.Bucket{TableID: tableID, PartitionID: partitionID, Bucket: int32(n)})
				}
			}
		}
	}
	return out, nil
}

// numbered parses a directory entry named prefix<non-negative decimal>.
func numbered(e os.DirEntry, prefix string) (int64, bool) {
	if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(e.Name(), prefix), 10, 64)
	return n, err == nil && n >= 0
}

// removeEmptyTableDirs removes the partition and table directories the removed buckets leave
// empty (os.Remove fails on a directory that is not, which is what keeps the others).
func removeEmptyTableDirs(root string, removed []cluster.Bucket) {
	for _, b := range removed {
		if b.PartitionID != cluster.NoPartition {
			_ = os.Remove(tableDir(root, b.TableID, b.PartitionID))
		}
		_ = os.Remove(tableDir(root, b.TableID, cluster.NoPartition))
	}
}
