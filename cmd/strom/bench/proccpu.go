package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: the kernel reports them in
// USER_HZ ticks, which is 100 per second on every architecture Strom builds for (it is part
// of the kernel's ABI, independent of the kernel's own tick rate).
const userHZ = 100

// ProcCPU returns the CPU time (user + system) the processes pids have used so far, summed,
// read from /proc/PID/stat. Each process's figure covers all its threads and the children it
// has waited for; a JVM or `strom serve` counts whole. The resolution is 10 ms per process.
// A pid that is gone is an error: its CPU time can no longer be read, so any sum would be
// short.
func ProcCPU(pids ...int) (time.Duration, error) {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
		}
		t, err := parseStatCPU(b)
		if err != nil {
			return 0, fmt.Errorf("cpu of pid %d: %w", pid, err)
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// parseStatCPU returns utime + stime + cutime + cstime (fields 14–17, in ticks) of one
// /proc/PID/stat line. The second field, the command name in parentheses, may itself hold
// spaces and parentheses, so the fields are counted from the last ')'.
func parseStatCPU(stat []byte) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", truncate(stat))
	}
	fields := bytes.Fields(stat[end+1:])
	// fields[0] is field 3 (state), so field n is fields[n-3].
	const utime, cstime = 14 - 3, 17 - 3
	if len(fields) <= cstime {
		return 0, fmt.Errorf("/proc stat %q: %d fields after the command name, want more than %d", truncate(stat), len(fields), cstime)
	}
	var sum int64
	for _, f := range fields[utime : cstime+1] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("/proc stat %q: CPU field %q", truncate(stat), f)
		}
		sum += v
	}
	return sum, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
