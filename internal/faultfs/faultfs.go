// Package faultfs injects disk faults — delays, EIO, ENOSPC — into the file operations of
// the log store's segment files and of Pebble's files (the primary-key state, through
// server/pebblefs), for tests of gray failures in real `strom serve` processes
// (docs/durability.md, "Gray failures").
//
// It is off unless the environment variable STROM_FAULTS names a rules file when the
// process starts; a production process that does not set it pays one atomic load per
// operation and can never be made to fail by it. While active, the rules file is read again
// whenever its modification time or size changes (checked at most every 50 ms), so a test
// turns faults on and off by rewriting it. A missing or empty file means no faults.
//
// A rules file has one rule a line (blank lines and lines starting with # are ignored):
//
//	OP PATH ACTION
//
// OP is sync (fdatasync), write, or * for both; PATH matches every file whose path starts
// with it (a directory, one segment file, or * for every file); ACTION is delay=DURATION (the
// operation sleeps that long, then runs), eio or enospc (the operation fails with that errno
// and does nothing). The first matching rule applies. A malformed file is reported once on
// stderr of the process and then treated as empty, so a test sees its mistake in the logs
// rather than a fault that silently does not happen.
package faultfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// EnvVar names the rules file; unset, the package injects nothing.
const EnvVar = "STROM_FAULTS"

// Op is a file operation faults can be injected into.
type Op string

// The operations the log store and server/pebblefs report.
const (
	Sync  Op = "sync"
	Write Op = "write"
)

// rule is one line of the rules file.
type rule struct {
	op     Op // "" matches every operation
	prefix string
	delay  time.Duration
	errno  syscall.Errno // 0: delay only
}

// injector holds the rules of one rules file, reloaded when the file changes.
type injector struct {
	path string

	mu      sync.Mutex
	checked time.Time // when the file was last stat'ed
	modTime time.Time
	size    int64
	rules   []rule
}

// reloadEvery bounds how stale the rules may be after the file changed.
const reloadEvery = 50 * time.Millisecond

var active atomic.Pointer[injector]

func init() {
	if p := os.Getenv(EnvVar); p != "" {
		active.Store(&injector{path: p})
		fmt.Fprintf(os.Stderr, "faultfs: disk fault injection is ACTIVE (rules file %s, from $%s); never set it in production\n", p, EnvVar)
	}
}

// Active reports whether fault injection is on in this process.
func Active() bool { return active.Load() != nil }

// Before is called before op on the file at path: it sleeps for a delay rule and returns
// the error of an error rule (an *os.PathError carrying the errno), in which case the
// caller must not perform the operation. Inactive, it returns nil at once.
func Before(op Op, path string) error {
	in := active.Load()
	if in == nil {
		return nil
	}
	r, ok := in.match(op, path)
	if !ok {
		return nil
	}
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	if r.errno != 0 {
		return &os.PathError{Op: string(op), Path: path, Err: r.errno}
	}
	return nil
}

func (in *injector) match(op Op, path string) (rule, bool) {
	in.mu.Lock()
	in.reloadLocked(time.Now())
	rules := in.rules
	in.mu.Unlock()
	for _, r := range rules {
		if (r.op == "" || r.op == op) && strings.HasPrefix(path, r.prefix) {
			return r, true
		}
	}
	return rule{}, false
}

func (in *injector) reloadLocked(now time.Time) {
	if now.Sub(in.checked) < reloadEvery {
		return
	}
	in.checked = now
	st, err := os.Stat(in.path)
	if err != nil {
		in.rules, in.modTime, in.size = nil, time.Time{}, 0
		return
	}
	if st.ModTime().Equal(in.modTime) && st.Size() == in.size {
		return
	}
	in.modTime, in.size = st.ModTime(), st.Size()
	data, err := os.ReadFile(in.path)
	if err == nil {
		var rules []rule
		if rules, err = parse(data); err == nil {
			in.rules = rules
			return
		}
	}
	in.rules = nil
	fmt.Fprintf(os.Stderr, "faultfs: rules file %s ignored: %v\n", in.path, err)
}

// parse reads a rules file (see the package documentation).
func parse(data []byte) ([]rule, error) {
	var rules []rule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want OP PATH ACTION, got %q", n, line)
		}
		var r rule
		switch Op(f[0]) {
		case Sync, Write:
			r.op = Op(f[0])
		case "*":
		default:
			return nil, fmt.Errorf("line %d: operation %q is not sync, write or *", n, f[0])
		}
		if f[1] != "*" {
			r.prefix = f[1]
		}
		switch action := f[2]; {
		case action == "eio":
			r.errno = syscall.EIO
		case action == "enospc":
			r.errno = syscall.ENOSPC
		case strings.HasPrefix(action, "delay="):
			d, err := time.ParseDuration(strings.TrimPrefix(action, "delay="))
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("line %d: %q is not a positive delay", n, action)
			}
			r.delay = d
		default:
			return nil, fmt.Errorf("line %d: action %q is not delay=DURATION, eio or enospc", n, action)
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

// ActivateForTest turns injection on with the rules file at path, as STROM_FAULTS would at
// start, and returns the function that turns it off again. For in-process tests of other
// packages: rules should name the test's own directories, since the injector is
// process-wide.
func ActivateForTest(path string) (deactivate func()) {
	prev := active.Swap(&injector{path: path})
	return func() { active.Store(prev) }
}
