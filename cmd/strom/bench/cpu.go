package bench

import (
	"syscall"
	"time"
)

// processCPU returns the user plus system CPU time this process has used so far (0 if the
// operating system does not say).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuClock reads the CPU time of this process (the client) and, when the config says how,
// of the server, at the start and the end of one timed section.
type cpuClock struct {
	cfg              *Config
	client0, server0 time.Duration
	serverOK         bool // server0 was read
}

// startCPU takes the readings at the start of a timed section; call it right before the
// workers are released.
func startCPU(cfg *Config) cpuClock {
	c := cpuClock{cfg: cfg, client0: processCPU()}
	if cfg.ServerCPU != nil {
		var err error
		c.server0, err = cfg.ServerCPU()
		c.serverOK = err == nil
	}
	return c
}

// stop records the CPU spent since startCPU in t: the client's always, the server's when
// both readings succeeded (otherwise t.serverCPU stays 0, which Result reports as not
// measured).
func (c cpuClock) stop(t *tally) {
	t.cpu = processCPU() - c.client0
	if !c.serverOK {
		return
	}
	if s, err := c.cfg.ServerCPU(); err == nil && s >= c.server0 {
		t.serverCPU = s - c.server0
	}
}
