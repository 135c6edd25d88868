package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stromdb/strom/tests/history"
)

// WorkerEnv names the environment variable that turns a test binary into a worker: a client
// process started inside a host's namespace (the Go client dials from the namespace the
// process runs in, so each client side of a partition is a process of its own). Its value
// is the JSON of a WorkerConfig.
const WorkerEnv = "STROM_NETNS_WORKER"

// WorkerConfig tells a worker what to do.
type WorkerConfig struct {
	// Mode: "setup" creates Database and the tables; "workload" runs appends, upserts and
	// lookups until SIGTERM, recording every operation to Out (history.Op JSON lines);
	// "read" writes a ReadResult of the final state to Out; "meta" writes a Meta to Out.
	Mode      string
	Bootstrap string
	Database  string
	LogTable  string // a log table (id BIGINT, payload STRING)
	PKTable   string // a primary-key table (id BIGINT PRIMARY KEY, v BIGINT)
	Buckets   int32  // of each table, for setup
	Keys      int64  // the PK table's keys are 0..Keys-1
	Proc      int    // this worker's number: ids and values it writes are Proc<<40 | seq
	Out       string
	// Acks is the writers' acks ("all", "1", "0"); default all.
	Acks string
	// Acks1Table, when set, is a second log table that the workload also appends to, over a
	// connection of its own with acks=1, recording to Out+".acks1": what such writes lose is
	// measured, not checked.
	Acks1Table string
	// EtcdEndpoints, for meta: the etcd members to ask who leads; MoveEtcdLeaderTo, when set,
	// makes that member (etcd.name) the etcd leader first.
	EtcdEndpoints    []string
	MoveEtcdLeaderTo string
}

// ReadResult is the final state a "read" worker saw.
type ReadResult struct {
	LogTableID int64
	PKTableID  int64
	Log        []history.Record // the log table, every record from the log start
	Changelog  []history.Record // the PK table's changelog
	Final      map[int64]int64  // lookups of every key after the writes stopped
	Acks1Log   []history.Record // the Acks1Table, when there is one
}

// Meta is who leads what, as a "meta" worker saw it.
type Meta struct {
	Leaders     map[string]map[int32]int32 // table → bucket → leader's tablet-server.id
	Coordinator string                     // host address of the active coordinator
	EtcdLeader  string                     // etcd.name of the etcd leader
}

// RunWorkerIfAsked runs the worker and exits when WorkerEnv is set; call it first in TestMain.
func RunWorkerIfAsked() {
	raw := os.Getenv(WorkerEnv)
	if raw == "" {
		return
	}
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker config:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := runWorker(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Worker is a worker process started by StartWorker.
type Worker struct {
	Cfg  WorkerConfig
	Host *Host
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartWorker starts the test binary as a worker in h's namespace. It is killed when t ends.
func StartWorker(t testing.TB, h *Host, cfg WorkerConfig) *Worker {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cfg)
	w := &Worker{Cfg: cfg, Host: h, log: filepath.Join(t.TempDir(), fmt.Sprintf("worker-%s-%s-%d.log", cfg.Mode, h.Name, cfg.Proc)), done: make(chan struct{})}
	out, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	bin, args := h.Command(self, "-test.run=^$")
	w.cmd = exec.Command(bin, args...)
	w.cmd.Env = append(os.Environ(), WorkerEnv+"="+string(raw))
	w.cmd.Stdout, w.cmd.Stderr = out, out
	// Killed with the test process even when its cleanup cannot run.
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("netns: start worker: %v", err)
	}
	go func() { w.err = w.cmd.Wait(); out.Close(); close(w.done) }()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// Wait waits up to timeout for the worker to exit; its error says why it failed, with the
// end of its output.
func (w *Worker) Wait(timeout time.Duration) error {
	select {
	case <-w.done:
	case <-time.After(timeout):
		w.cmd.Process.Kill()
		<-w.done
		return fmt.Errorf("worker %s in %s did not finish within %s: %s", w.Cfg.Mode, w.Host.Name, timeout, w.tail())
	}
	if w.err != nil {
		return fmt.Errorf("worker %s in %s: %w: %s", w.Cfg.Mode, w.Host.Name, w.err, w.tail())
	}
	return nil
}

// Stop asks the worker to stop (SIGTERM) and waits up to timeout.
func (w *Worker) Stop(timeout time.Duration) error {
	w.cmd.Process.Signal(syscall.SIGTERM)
	return w.Wait(timeout)
}

func (w *Worker) tail() string {
	b, _ := os.ReadFile(w.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// RunWorker runs a worker to its end (setup, read, meta) and decodes its output into out.
func RunWorker(t testing.TB, h *Host, cfg WorkerConfig, timeout time.Duration, out any) error {
	t.Helper()
	if cfg.Out == "" {
		f, err := os.CreateTemp(t.TempDir(), "worker-out-*")
		if err != nil {
			return err
		}
		f.Close()
		cfg.Out = f.Name()
	}
	if err := StartWorker(t, h, cfg).Wait(timeout); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	b, err := os.ReadFile(cfg.Out)
	if err != nil {
		return fmt.Errorf("worker output: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("worker output: %w", err)
	}
	return nil
}

// recorder appends operations to a history file as JSON lines, flushed every 100 ms so that
// the test can follow progress while the worker runs.
type recorder struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history file: %w", err)
	}
	w := bufio.NewWriter(f)
	return &recorder{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

func (r *recorder) add(o history.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enc.Encode(o)
}

func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.Flush()
}

func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.w.Flush(), r.f.Close())
}
