package compare

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
)

// process is one server process started by the benchmark, in its own process group so that
// stopping it also stops anything it spawned.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // exit status, valid after done
}

// startProcess starts argv with stdout and stderr to logPath. The child is killed by the
// kernel if this process dies (Pdeathsig), so a crashed or killed benchmark leaves nothing
// running.
func startProcess(name, logPath, dir string, argv []string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, and SIGKILL if it has not exited after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last n lines of the process's log, for error messages.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// group is the set of processes of one running server; stopping it stops them in reverse
// start order. It is safe to stop twice.
type group struct {
	mu    sync.Mutex
	procs []*process
}

func (g *group) add(p *process) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.procs = append(g.procs, p)
}

func (g *group) stop(grace time.Duration) {
	g.mu.Lock()
	procs := g.procs
	g.procs = nil
	g.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(grace)
	}
}

// failed returns an error naming the first process that has exited, or nil.
func (g *group) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		if p.exited() {
			return fmt.Errorf("%s exited (%v); log %s:\n%s", p.name, p.err, p.log, p.tail(20))
		}
	}
	return nil
}

// memory sums VmRSS and VmHWM (peak) over the group's processes, in bytes.
func (g *group) memory() (rss, peak int64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		r, h, err := procMemory(p.pid())
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", p.name, err)
		}
		rss += r
		peak += h
	}
	return rss, peak, nil
}

// cpu returns the CPU time (user + system) the group's processes have used so far, summed
// (for Fluss its three JVMs, ZooKeeper included).
func (g *group) cpu() (time.Duration, error) {
	g.mu.Lock()
	pids := make([]int, len(g.procs))
	for i, p := range g.procs {
		pids[i] = p.pid()
	}
	g.mu.Unlock()
	if len(pids) == 0 {
		return 0, errors.New("no server process")
	}
	return bench.ProcCPU(pids...)
}

// procMemory reads VmRSS and VmHWM of pid from /proc/<pid>/status.
func procMemory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := parseKB(v)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", k, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return rss, hwm, sc.Err()
}

// parseKB parses a /proc status value such as "  123456 kB".
func parseKB(v string) (int64, error) {
	f := strings.Fields(v)
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("unexpected value %q", v)
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners are closed before
// returning, so another program could take a port in between; on a loaded machine that is
// rare, and the server's start then fails loudly rather than measuring the wrong thing.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
