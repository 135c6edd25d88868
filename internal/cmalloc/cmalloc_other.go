//go:build !cgo || !linux

package cmalloc

// Without cgo Pebble allocates its cache on the Go heap; there is no C allocator to tune.
func state() State { return NotGlibc }
