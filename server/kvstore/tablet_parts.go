package kvstore

// A Tablet is split by concern into the parts below. Each part is reached only through its
// Tablet (the back-pointer t) and works on the Tablet's state under the Tablet's locks; the
// Tablet's own methods are its API (reads, the PUT_KV entry points, roles, lifecycle). The
// invariants of the state they share are documented on Tablet and in pipeline.go.

// pipeline is the PUT_KV write path between the entry points (PutStaged, InsertMissingStaged)
// and Pebble: staging a batch under mu, the Pending that waits for durability, and applying
// durable batches to Pebble in offset order (pipeline.go, put.go, durable.go). It owns the
// recycled staged batches and the apply scratch.
type pipeline struct {
	t *Tablet

	free         []*stagedBatch // recycled staged batches; guarded by t.mu
	readyScratch []*stagedBatch // guarded by t.applyMu
}

// rowWriter is the per-record step of staging: read the current row (pre-write queue, row
// cache, Pebble), merge the new one into it per the table's merge engine, check keys, assign
// auto-increment ids and encode the state write and the changelog record (put.go,
// autoinc.go). Every method runs with t.mu held, on the Tablet's writeScratch.
type rowWriter struct {
	t *Tablet
}

// recovery brings a Tablet's state in line with its changelog: replaying the changelog from
// the applied offset at open, catching a follower up to the high watermark, staging the
// uncommitted tail of a new leader, and rebuilding the state from the whole changelog after
// corruption or an operator's cut (recover.go, replica.go, repair.go).
type recovery struct {
	t *Tablet
}
