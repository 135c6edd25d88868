package cmalloc

// Arenas is the number of glibc malloc arenas (M_ARENA_MAX); the C constructor in
// cmalloc_glibc.go repeats it (cgo CFLAGS), TestSettingsMatch keeps the two equal.
const Arenas = 1

// MmapThreshold is the size from which glibc serves an allocation with its own mapping
// (M_MMAP_THRESHOLD), fixed at glibc's initial value so that it no longer grows: Pebble's
// memtables (8 MiB) are then always mapped and unmapped whole.
const MmapThreshold = 128 << 10

// State says what the package did to the C allocator when the program was loaded.
type State int

const (
	// Refused: glibc refused a setting; the allocator may run with its defaults.
	Refused State = 0
	// Tuned: one arena and a fixed mmap threshold are in effect.
	Tuned State = 1
	// NotGlibc: nothing to tune (a build without cgo, or another C library).
	NotGlibc State = -1
	// FromEnvironment: MALLOC_ARENA_MAX or MALLOC_MMAP_THRESHOLD_ was set; glibc follows the
	// environment and the package changed nothing.
	FromEnvironment State = -2
)

func (s State) String() string {
	switch s {
	case Tuned:
		return "tuned"
	case NotGlibc:
		return "not glibc"
	case FromEnvironment:
		return "from environment"
	default:
		return "refused"
	}
}

// Current reports what happened. Importing the package is what tunes the allocator (a C
// constructor, before the Go runtime starts: see cmalloc_glibc.go), so only programs that
// run a server import it; `strom` does.
func Current() State { return state() }
