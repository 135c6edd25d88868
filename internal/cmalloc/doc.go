// Package cmalloc tunes, when it is imported, the C allocator of the process, which Pebble uses for its block cache
// and memtables when Strom is built with cgo (Pebble's internal/manual calls C.calloc and
// C.free, to keep up to hundreds of MiB of cache out of the Go heap and the garbage
// collector's pacing).
//
// glibc's malloc defaults fit that use badly, and a server showed it as memory that no owner
// accounts for (docs/benchmarks.md, "Resident memory: who holds it"):
//   - Per-thread arenas. glibc gives threads that contend for the allocator their own arena,
//     up to 8 per core. Go runs cgo calls on whichever OS thread runs the goroutine, so a
//     cache block allocated on one thread is freed on another and its space can be reused only
//     by threads of the first arena: after the side-by-side workload, eight arenas held 190 MiB
//     of a 64 MiB block cache plus 16 MiB of memtables. One arena holds the same cache in
//     ~70 MiB. Contention does not matter here: Pebble allocates a block only on a cache miss
//     (after a pread) and a memtable every 8 MiB of writes.
//   - The dynamic mmap threshold. Allocations above the threshold (128 KiB at start) get their
//     own mapping, returned to the kernel when freed, but freeing one raises the threshold to
//     its size (up to 32 MiB), so after the first memtable is freed every later 8 MiB memtable
//     is carved from an arena and its pages stay resident after the memtable is gone. Setting
//     the threshold explicitly turns the adjustment off.
package cmalloc
