package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A real line's shape (Linux 6.x): pid (comm) state ppid … utime stime cutime cstime …,
	// with a command name that holds spaces and a ')' to trip a naive split.
	line := "4242 (java (main) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 " +
		"1234 567 8 9 20 0 42 0 5000 1000000 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1234 + 567 + 8 + 9); got != want {
		t.Errorf("parseStatCPU = %d ticks, want %d (utime+stime+cutime+cstime)", got, want)
	}
	for _, bad := range []string{
		"",
		"4242 java S 1 2 3", // no parentheses
		"4242 (java) S 1 4242 4242 0 -1 4194560 1",                        // cut short
		"4242 (java) S 1 4242 4242 0 -1 4194560 100 0 0 0 12x 567 8 9 20", // not a number
		"4242 (java) S 1 4242 4242 0 -1 4194560 100 0 0 0 -1 567 8 9 20",  // negative
	} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) accepted", bad)
		}
	}
}

func TestProcCPUOfThisProcess(t *testing.T) {
	self := os.Getpid()
	one, err := ProcCPU(self)
	if err != nil {
		t.Fatal(err)
	}
	two, err := ProcCPU(self, self)
	if err != nil {
		t.Fatal(err)
	}
	// Counters only grow, and two pids are summed; the readings are 10 ms ticks.
	if one < 0 || two < 2*one || two%(10*time.Millisecond) != 0 {
		t.Errorf("ProcCPU(self) = %v, ProcCPU(self, self) = %v", one, two)
	}
	if _, err := ProcCPU(self, 1<<30); err == nil || !strings.Contains(err.Error(), "pid 1073741824") {
		t.Errorf("ProcCPU of a pid that does not exist = %v, want an error naming it", err)
	}
}
