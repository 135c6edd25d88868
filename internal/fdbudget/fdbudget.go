// Package fdbudget treats the process's file descriptors as one budget. At start the soft
// RLIMIT_NOFILE is raised to the hard limit; the limit is then split between what the node's
// storage needs (log segments, Pebble, embedded etcd, replication links, the lake child, the
// runtime) and what client connections may use, so that no number of clients can starve
// storage of descriptors. docs/operations.md, "File descriptors" describes the accounting.
package fdbudget

import (
	"fmt"
	"os"
	"syscall"
)

// Reservation floor and share: storage keeps at least MinReserved descriptors and at least
// ReservedShare of the limit, whichever is more.
const (
	// MinReserved covers a small node: embedded etcd (WAL, snapshots, bbolt, its peer and
	// client sockets), a few Pebble instances and log segments, replication links, the lake
	// child's pipes and the runtime's own descriptors.
	MinReserved = 512
	// ReservedShare is the fraction of the limit storage keeps on larger limits: storage grows
	// with buckets, connections only with clients.
	ReservedShare = 0.5
	// MinConnections is the fewest client connections a budget allows, even when the limit
	// leaves less: a node that can be reached by no client is of no use.
	MinConnections = 64
)

// Budget is the split of the descriptor limit.
type Budget struct {
	Limit       int // soft RLIMIT_NOFILE (after Raise)
	Reserved    int // kept for storage and the process itself
	Connections int // client connections over all listeners (Fluss and Kafka)
}

// Raise sets the soft RLIMIT_NOFILE to the hard limit and returns the limits before and
// after. It is idempotent.
func Raise() (before, after uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, fmt.Errorf("get RLIMIT_NOFILE: %w", err)
	}
	before = rl.Cur
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return before, before, fmt.Errorf("raise RLIMIT_NOFILE from %d to %d: %w", before, rl.Max, err)
		}
	}
	return before, rl.Cur, nil
}

// Limit is the current soft RLIMIT_NOFILE.
func Limit() (int, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("get RLIMIT_NOFILE: %w", err)
	}
	const maxInt = int(^uint(0) >> 1)
	if rl.Cur > uint64(maxInt) { // RLIM_INFINITY
		return maxInt, nil
	}
	return int(rl.Cur), nil
}

// Plan splits limit. reserved > 0 is an operator's reservation (fd.reserved); 0 takes the
// default: max(MinReserved, ReservedShare × limit). Connections never drop below
// MinConnections, and never exceed what the limit leaves after the reservation otherwise.
func Plan(limit, reserved int) Budget {
	if reserved <= 0 {
		reserved = max(MinReserved, int(float64(limit)*ReservedShare))
	}
	conns := max(limit-reserved, MinConnections)
	return Budget{Limit: limit, Reserved: reserved, Connections: conns}
}

// Open counts the descriptors the process has open now (every owner: sockets, segments,
// Pebble, etcd, pipes). It reads /proc/self/fd, so it costs a directory scan; call it for
// metrics and warnings, not per request.
func Open() (int, error) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("count open descriptors: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("count open descriptors: %w", err)
	}
	return len(names) - 1, nil // less the directory being read
}
