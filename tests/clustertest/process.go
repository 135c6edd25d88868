package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is one server process: a binary and its arguments, started and restarted with the
// same command line, its output appended to a log file that survives restarts.
type Process struct {
	t    testing.TB
	name string
	bin  string
	args []string
	env  []string
	log  string // path of the output file

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	// ready counts the ready lines seen in the log so far, so that WaitReady after a restart
	// waits for a new one.
	readySeen int
	// scanned is how far countReady has read the log (always just past a newline) and
	// readyScanned how many ready lines that part holds: the log only grows, so each poll
	// reads only what was appended since the last (a node with thousands of buckets logs
	// tens of megabytes, which a whole re-read every 20 ms turned into a core of CPU).
	scanned      int64
	readyScanned int
}

// ReadyLine is what `strom serve` logs once it serves requests.
const ReadyLine = "strom is ready"

// NewProcess describes a process; Start runs it. It is killed when t ends.
func NewProcess(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, name: name, bin: bin, args: args, log: filepath.Join(t.TempDir(), name+".log")}
	t.Cleanup(func() { p.Kill() })
	return p
}

// SetEnv sets extra environment variables (KEY=VALUE) for the next Start.
func (p *Process) SetEnv(kv ...string) { p.env = append(p.env, kv...) }

// AddArgs appends arguments to the command line of the next Start (and later ones).
func (p *Process) AddArgs(args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = append(p.args, args...)
}

// LogPath is the file the process's standard output and error go to.
func (p *Process) LogPath() string { return p.log }

// Start runs the process. It fails the test if the process is running.
func (p *Process) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.t.Fatalf("clustertest: %s is already running", p.name)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatalf("clustertest: %s log: %v", p.name, err)
	}
	fmt.Fprintf(out, "=== clustertest: start %s %s\n", p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), p.env...)
	// Its own process group, so that signals reach the server and not the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		p.t.Fatalf("clustertest: start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		out.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// WaitReady waits until the log shows one more ReadyLine than before this start, or fails the
// test after timeout (or when the process exits first).
func (p *Process) WaitReady(timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if n := p.countReady(); n > p.readySeen {
			p.readySeen = n
			return
		}
		if !p.Running() {
			p.t.Fatalf("clustertest: %s exited before it was ready; log %s:\n%s", p.name, p.log, p.tail(20))
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("clustertest: %s not ready after %s; log %s:\n%s", p.name, timeout, p.log, p.tail(20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *Process) countReady() int {
	f, err := os.Open(p.log)
	if err != nil {
		return p.readyScanned
	}
	defer f.Close()
	if _, err := f.Seek(p.scanned, io.SeekStart); err != nil {
		return p.readyScanned
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: count it if it holds the ready line, then skip
			// to its end.
			found := bytes.Contains(line, []byte(ReadyLine))
			n := int64(len(line))
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				found = found || bytes.Contains(line, []byte(ReadyLine))
				n += int64(len(line))
			}
			if err != nil {
				return p.readyScanned // incomplete: read again from its start next time
			}
			if found {
				p.readyScanned++
			}
			p.scanned += n
			continue
		}
		if err != nil {
			return p.readyScanned // EOF: a partial last line is read again next time
		}
		if bytes.Contains(line, []byte(ReadyLine)) {
			p.readyScanned++
		}
		p.scanned += int64(len(line))
	}
}

// tail returns the last n lines of the log.
func (p *Process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// signal sends sig to the running process; false when it is not running.
func (p *Process) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
	}
	return p.cmd.Process.Signal(sig) == nil
}

// Kill sends SIGKILL (a crash: nothing is flushed or closed) and waits for the exit.
func (p *Process) Kill() {
	p.signal(syscall.SIGCONT) // a stopped process dies only once resumed on some kernels
	p.signal(syscall.SIGKILL)
	p.reap(10 * time.Second)
}

// Terminate sends SIGTERM (a clean shutdown) and waits up to timeout for the exit, then kills.
// It returns whether the process exited by itself.
func (p *Process) Terminate(timeout time.Duration) bool {
	if !p.signal(syscall.SIGTERM) {
		p.reap(timeout)
		return true
	}
	if p.reap(timeout) {
		return true
	}
	p.Kill()
	return false
}

// Pause stops the process with SIGSTOP: it keeps its sockets and files but does nothing, as a
// server stuck in a long GC pause or on a frozen machine does.
func (p *Process) Pause() { p.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() { p.signal(syscall.SIGCONT) }

// Restart kills the process if it runs and starts it again with the same command line.
func (p *Process) Restart() {
	p.t.Helper()
	p.Kill()
	p.Start()
}

// reap waits up to timeout for the process to exit and forgets it; false on timeout.
func (p *Process) reap(timeout time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return false
	}
	p.mu.Lock()
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	return true
}

// Pid is the operating-system process id of the running process, 0 when it is not running.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	select {
	case <-p.done:
		return 0
	default:
		return p.cmd.Process.Pid
	}
}
