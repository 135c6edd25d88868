//go:build cgo && linux

package cmalloc

/*
#cgo CFLAGS: -DSTROM_ARENAS=1 -DSTROM_MMAP_THRESHOLD=131072
#include <stdlib.h>
#include <malloc.h>

// 1: glibc took the settings; 0: glibc refused one; -1: not glibc; -2: left to the
// environment (MALLOC_ARENA_MAX or MALLOC_MMAP_THRESHOLD_ set).
static int strom_malloc_tuned = -1;

// A constructor runs when the program is loaded, before the Go runtime starts its threads.
// It must: glibc fixes the arena limit the first time a thread without an arena allocates,
// which the Go runtime's threads do before main, so a mallopt from Go code comes too late.
__attribute__((constructor)) static void strom_tune_malloc(void) {
#if defined(__GLIBC__)
	if (getenv("MALLOC_ARENA_MAX") != NULL || getenv("MALLOC_MMAP_THRESHOLD_") != NULL) {
		strom_malloc_tuned = -2;
		return;
	}
	int ok = mallopt(M_ARENA_MAX, STROM_ARENAS);
	ok &= mallopt(M_MMAP_THRESHOLD, STROM_MMAP_THRESHOLD);
	strom_malloc_tuned = ok;
#endif
}

static int strom_malloc_state(void) { return strom_malloc_tuned; }
*/
import "C"

func state() State { return State(C.strom_malloc_state()) }
