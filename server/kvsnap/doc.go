// Package kvsnap produces and serves the KV snapshots of primary-key buckets that Fluss readers
// use for the `full` startup mode (docs/kv-snapshots.md): a reader loads a bucket's snapshot,
// then reads the changelog from the snapshot's log offset.
//
// A snapshot is a RocksDB database directory (internal/rocksdbdir) holding every row of the
// bucket as of its log offset: the first changelog offset it does not contain. It is taken from
// a kvstore.StateView, which is consistent with that offset by construction. Snapshots are
// incremental: a new snapshot reuses the previous one's table files and adds one table with the
// rows changed and deleted since, one LSM level above; a full rewrite happens when the levels
// are used up or the changes outweigh the rows.
//
// The files live in remote storage (remote.Storage: a file system or S3), under the same keys
// for every node; a snapshot is built in a local directory and uploaded, and read back by
// downloading it (remotefiles.go). No node reads another's disk.
//
// Invariants:
//   - A snapshot's metadata is written to the metadata store only after every upload of its
//     files returned (uploads are atomic and durable), and files are deleted only after no
//     retained or leased snapshot's metadata names them.
//   - The local directory holds copies only: it is emptied at Open, and a local table is used
//     as the base of an incremental snapshot only if its size is the one the committed
//     snapshot lists (table numbers are never reused with other content by a committed
//     snapshot).
//   - The changelog of a bucket is retained from the smallest log offset among its retained
//     (kv.snapshot.num-retained newest) and leased snapshots (Floor); a primary-key bucket with no
//     snapshot keeps its whole changelog. So a bucket whose log start offset is above 0 always has
//     a snapshot, and every snapshot handed out can be followed by its changelog.
//   - In a cluster, a snapshot is committed only by its bucket's leader, while etcd's state of
//     the bucket names it leader at the epoch the snapshot was taken under (LeaderFence); ids
//     are one above the newest committed, read afresh, so they grow across leader changes; and
//     leaders of different epochs never write files of the same name.
//   - Leases and cleanup are written only by the active coordinator, through its fenced store,
//     and decided on fresh reads of the store; the newest snapshot of an existing bucket is
//     never deleted.
//   - A manager's maps are a view of the store (a watch in a cluster), used for the read APIs
//     and the retention floor only.
package kvsnap
