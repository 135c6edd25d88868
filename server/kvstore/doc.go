// Package kvstore is the primary-key state of Strom's tablet server: one Pebble instance per
// server (Store) holding every bucket's rows under a table/partition/bucket key prefix, and per
// bucket a Tablet that implements PUT_KV (merge engines, partial updates, changelog
// generation in FULL or WAL image), LOOKUP, PREFIX_LOOKUP and LIMIT_SCAN, following Fluss's
// KvTablet (docs/primary-keys.md).
//
// # Durability
//
// The bucket's log (server/logstore) is the write-ahead log. A Put appends its changelog
// batch to the log first (durable per the log's flush policy) and then commits the new rows
// to Pebble together with the applied offset (the log end offset after that batch), in one
// Pebble batch. Pebble's own WAL is disabled, so a crash loses whatever Pebble had not
// flushed; OpenTablet replays the changelog from the applied offset that survived, which
// restores exactly the state the log describes. Store.Checkpoint flushes Pebble and lets the
// log's retention drop changelog segments below the flushed applied offsets.
//
// # Damage (repair.go, pebblerepair.go, diskfull.go)
//
// A state the changelog cannot back (the log is offline, ends before the applied offset or
// starts after it) is never rebuilt from it: the tablet opens offline (KV_STORAGE_EXCEPTION)
// until an operator cuts the log (strom repair-log), after which it is rebuilt from what
// remains. A corrupt Pebble table is taken out of Pebble whole (ingest-and-excise of its key
// span) and the buckets it held are rebuilt from their complete changelogs. Failed Pebble
// flushes (a full disk) are retried with backoff, refuse new writes (Store.WriteError) and
// never make Checkpoint or Close wait unboundedly.
//
// # Reads
//
// Scans read Pebble directly; lookups read the row cache first and Pebble on a miss
// (rowcache.go, "Lookups", for why a cached answer is one Pebble would give). Because Put
// commits to Pebble only after the log acknowledged the changelog, fills the row cache only
// after that commit, and the tablet server answers a PUT_KV only after both, every
// acknowledged write is visible to reads, and reads never see a write the log lost.
//
// # Replication
//
// With a replicated log (logstore.Options.ExternalHighWatermark) a tablet has a role, set by
// the replica manager (replica.go); until then it refuses writes (NOT_LEADER_OR_FOLLOWER).
//
//   - Follower (BecomeFollower): writes are refused; waiters of staged writes fail with
//     NOT_LEADER_OR_FOLLOWER; the pre-write buffer and apply queue are dropped (their
//     changelog lies above the HW and may be truncated); Pebble is kept. CatchUp replays the
//     changelog from the applied offset up to the HW (the replay recovery uses), keeping the
//     state hot. TruncateLog truncates the changelog, excluding CatchUp meanwhile.
//   - Leader (BecomeLeader): catches up to the HW, then stages every changelog batch between
//     the HW and the log end into the pre-write buffer and queue, so new writes merge against
//     the uncommitted tail. A write is acknowledged once its changelog is durable locally and
//     the HW has passed it; ApplyCommitted applies staged batches nobody waits for.
//
// Invariants: Pebble only ever holds state below the HW (recovery and CatchUp replay with
// Log.Read, which stops at the HW; the pipeline applies only queued batches the HW covers).
// The log's truncation floor is the applied offset (OpenTablet registers it), so a truncation
// never removes changelog that Pebble reflects. Recovery of a replicated tablet raises a
// lagging HW checkpoint to the applied offset, which was committed when it was applied.
package kvstore
