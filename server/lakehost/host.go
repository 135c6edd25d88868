// Package lakehost runs the data lake tiering in a child process, the strom-lake binary
// (cmd/strom-lake, package lake), and serves it what it reads of this server: the buckets the
// server leads, their logs and the catalog. It also answers for the tiering inside the server:
// the retention floor, GET_LAKE_SNAPSHOT and the tiering metrics. Iceberg's libraries live
// only in the child, so the strom binary neither links nor initializes them (docs/lake.md);
// Apache Fluss likewise tiers outside its servers, in a Flink job.
package lakehost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/lakeconf"
	"github.com/stromdb/strom/server/logstore"
)

// DefaultBinary is the tiering program's name: looked for next to the running executable,
// then on $PATH.
const DefaultBinary = "strom-lake"

// OptBinary is the server option naming the tiering program (a path, or a name looked up on
// $PATH).
const OptBinary = "datalake.tiering.binary"

// Bucket is one bucket this server leads.
type Bucket struct {
	Table     *cluster.TableInfo
	Partition *cluster.PartitionInfo // nil for non-partitioned tables
	ID        cluster.Bucket
	Log       *logstore.Log
}

// Source lists the buckets the server leads (the tablet server).
type Source interface {
	LakeBuckets() []Bucket
}

// Catalog is what the tiering reads of the Fluss catalog.
type Catalog = lakeconf.Catalog

// Options configures a Host.
type Options struct {
	Config lakeconf.Config
	Logger *slog.Logger
	// Binary is the tiering program: a path, or a name looked up on $PATH. "" looks for
	// DefaultBinary next to the running executable, then on $PATH.
	Binary string
	// ReadyTimeout bounds how long the first child may take to open the lake catalog
	// (default 1 min).
	ReadyTimeout time.Duration
	// FirstBackoff is the wait before restarting a child that exited (default 100 ms); each
	// further restart in a row waits twice as long, up to MaxBackoff (default 30 s).
	FirstBackoff, MaxBackoff time.Duration
}

// callTimeout bounds a call to the child made without a deadline of its own.
const callTimeout = 30 * time.Second

// Host supervises the tiering process. Its methods are safe for concurrent use.
type Host struct {
	opts Options
	bin  string
	log  *slog.Logger

	firstReady chan struct{} // closed when the first child is ready or failed
	firstErr   error         // why the first child failed, once firstReady is closed

	mu     sync.Mutex
	src    Source  // nil before Start
	cat    Catalog // nil before Start
	cur    *child  // the running, ready child; nil while there is none
	logs   map[cluster.Bucket]*logstore.Log
	closed bool

	stop chan struct{}
	done chan struct{}
}

// child is one run of the tiering process.
type child struct {
	cmd    *exec.Cmd
	client *rpc.Client // to its TiererService
	conns  []net.Conn
	ready  chan string // the child's ReadyArgs.Err, once
	exited chan struct{}
	err    error // of cmd.Wait, once exited is closed
	start  time.Time
	// offsets are the committed tiered offsets this child reported, by table (guarded by
	// Host.mu). Per child, so that a report made before the child became current counts, and
	// a new child starts from nothing known.
	offsets map[int64]lakeconf.Offsets
}

// FindBinary resolves the tiering program: name (a path, or a name on $PATH), or when name is
// "" DefaultBinary next to the running executable, then on $PATH.
func FindBinary(name string) (string, error) {
	if name == "" {
		if exe, err := os.Executable(); err == nil {
			p := filepath.Join(filepath.Dir(exe), DefaultBinary)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, nil
			}
		}
		name = DefaultBinary
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("the data lake's tiering program %s was not found (it is built next to strom by `make build`; set %s to its path): %w", name, OptBinary, err)
	}
	return filepath.Abs(p)
}

// New finds the tiering program and starts it; it opens the lake catalog meanwhile, which
// WaitReady waits for. Tiering begins with Start. A missing program is an error.
func New(opts Options) (*Host, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = time.Minute
	}
	if opts.FirstBackoff <= 0 {
		opts.FirstBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = max(30*time.Second, opts.FirstBackoff)
	}
	bin, err := FindBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	h := &Host{opts: opts, bin: bin, log: opts.Logger,
		logs: map[cluster.Bucket]*logstore.Log{}, stop: make(chan struct{}), done: make(chan struct{}),
		firstReady: make(chan struct{})}
	c, err := h.spawn()
	if err != nil {
		return nil, err
	}
	go func() {
		if h.firstErr = h.awaitReady(c); h.firstErr != nil {
			close(h.firstReady)
			c.kill()
			close(h.done)
			return
		}
		h.setCurrent(c) // before WaitReady returns: calls made after it reach the child
		close(h.firstReady)
		h.log.Info("lake tiering process started", "binary", bin, "pid", c.cmd.Process.Pid)
		h.supervise(c)
	}()
	return h, nil
}

// WaitReady waits until the first tiering process has opened the lake catalog, and returns
// why it could not.
func (h *Host) WaitReady(ctx context.Context) error {
	select {
	case <-h.firstReady:
		return h.firstErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start makes src's buckets, of tables in cat, the ones the tiering tiers.
func (h *Host) Start(src Source, cat Catalog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.src, h.cat = src, cat
}

// Close stops the tiering process (an unfinished round's files stay orphaned, uncommitted, as
// when the server stops).
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	close(h.stop)
	<-h.done
	return nil
}

// Floor returns the first offset of bucket b that retention must keep: the tiered offset of a
// lake-enabled table as the tiering last reported it (0 while it is not known: before the
// first report, after a failed commit, and while the tiering process restarts), or MaxInt64
// when the table is not lake-enabled.
func (h *Host) Floor(b cluster.Bucket) int64 {
	h.mu.Lock()
	cat := h.cat
	h.mu.Unlock()
	if cat == nil {
		return 0 // before Start: nothing known, keep everything
	}
	info, ok := cat.TableByID(b.TableID)
	var committed lakeconf.Offsets
	h.mu.Lock()
	if h.cur != nil {
		committed = h.cur.offsets[b.TableID]
	}
	h.mu.Unlock()
	return lakeconf.RetentionFloor(ok && info.Descriptor.Properties.DataLakeEnabled(), committed, lakeconf.BucketKey{PartitionID: b.PartitionID, Bucket: b.Bucket})
}

// ErrNotRunning is returned for calls to the tiering while its process is down (restarting).
var ErrNotRunning = errors.New("the data lake tiering process is not running (it is being restarted)")

// Snapshot returns the table's latest tiering snapshot (or the one with id snapshotID), as
// the tiering process reads it from Iceberg; lakeconf.ErrNoSnapshot when there is none.
func (h *Host) Snapshot(ctx context.Context, info *cluster.TableInfo, snapshotID *int64) (*lakeconf.LakeSnapshot, error) {
	var reply lakeconf.SnapshotReply
	if err := h.call(ctx, lakeconf.MethodSnapshot, lakeconf.SnapshotArgs{Table: info, SnapshotID: snapshotID}, &reply); err != nil {
		return nil, err
	}
	if !reply.Found {
		return nil, lakeconf.ErrNoSnapshot
	}
	return &reply.Snapshot, nil
}

// call calls the running child, within ctx's deadline or callTimeout.
func (h *Host) call(ctx context.Context, method string, args, reply any) error {
	h.mu.Lock()
	c := h.cur
	h.mu.Unlock()
	if c == nil {
		return ErrNotRunning
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callTimeout)
		defer cancel()
	}
	call := c.client.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if errors.Is(call.Error, rpc.ErrShutdown) {
			return ErrNotRunning
		}
		return call.Error
	case <-ctx.Done():
		return fmt.Errorf("lake tiering process: %s: %w", method, ctx.Err())
	}
}

// spawn starts a child process connected by two socket pairs.
func (h *Host) spawn() (*child, error) {
	hostConn, hostFile, err := socketPair()
	if err != nil {
		return nil, err
	}
	tierConn, tierFile, err := socketPair()
	if err != nil {
		hostConn.Close()
		hostFile.Close()
		return nil, err
	}
	cmd := exec.Command(h.bin, "--log-level", logLevel(h.log))
	cmd.Stdout = os.Stderr
	stderr, err := cmd.StderrPipe()
	if err != nil {
		hostConn.Close()
		tierConn.Close()
		hostFile.Close()
		tierFile.Close()
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{hostFile, tierFile} // fds 3 and 4
	cmd.SysProcAttr = childSysProcAttr()
	c := &child{cmd: cmd, conns: []net.Conn{hostConn, tierConn}, ready: make(chan string, 1), exited: make(chan struct{}),
		offsets: map[int64]lakeconf.Offsets{}}
	err = cmd.Start()
	hostFile.Close()
	tierFile.Close()
	if err != nil {
		hostConn.Close()
		tierConn.Close()
		return nil, fmt.Errorf("start the data lake tiering process %s: %w", h.bin, err)
	}
	c.start = time.Now()
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		relayLogs(stderr, h.log.With("pid", cmd.Process.Pid))
	}()
	go func() {
		<-relayed // Wait closes the pipe; read it to the end first
		c.err = cmd.Wait()
		c.closeConns()
		close(c.exited)
	}()
	srv := rpc.NewServer()
	if err := srv.RegisterName(lakeconf.HostService, &hostService{h: h, c: c}); err != nil {
		c.kill()
		return nil, err
	}
	go srv.ServeConn(hostConn)
	c.client = rpc.NewClient(tierConn)
	return c, nil
}

// awaitReady waits for the child's Ready call.
func (h *Host) awaitReady(c *child) error {
	t := time.NewTimer(h.opts.ReadyTimeout)
	defer t.Stop()
	select {
	case msg := <-c.ready:
		if msg != "" {
			return fmt.Errorf("open data lake: %s", msg)
		}
		return nil
	case <-c.exited:
		return fmt.Errorf("the data lake tiering process %s exited before it was ready: %v", h.bin, c.err)
	case <-t.C:
		return fmt.Errorf("the data lake tiering process %s was not ready within %v", h.bin, h.opts.ReadyTimeout)
	case <-h.stop:
		return ErrNotRunning
	}
}

// supervise restarts the child whenever it exits, with a growing backoff, until Close.
func (h *Host) supervise(c *child) {
	defer close(h.done)
	backoff := h.opts.FirstBackoff
	for {
		if c != nil {
			select {
			case <-c.exited:
			case <-h.stop:
				h.setCurrent(nil)
				c.shutdown()
				return
			}
			h.setCurrent(nil)
			if time.Since(c.start) > time.Minute {
				backoff = h.opts.FirstBackoff
			}
			h.log.Error("the data lake tiering process exited; restarting it", "pid", c.cmd.Process.Pid, "err", c.err, "after", backoff)
		}
		select {
		case <-time.After(backoff):
		case <-h.stop:
			return
		}
		backoff = min(2*backoff, h.opts.MaxBackoff)
		var err error
		if c, err = h.spawn(); err != nil {
			h.log.Error("restart the data lake tiering process", "err", err)
			continue
		}
		if err := h.awaitReady(c); err != nil {
			h.log.Error("restart the data lake tiering process", "err", err)
			c.kill()
			continue
		}
		h.log.Info("lake tiering process restarted", "pid", c.cmd.Process.Pid)
		h.setCurrent(c)
	}
}

// setCurrent makes c the child calls go to, and whose reported offsets the retention floor
// follows. A previous child's are forgotten: a new child reports them again as it reads them
// back from Iceberg, and until then the floor is 0, keep everything.
func (h *Host) setCurrent(c *child) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur = c
}

// shutdown closes the child's connections, on which it exits, and kills it if it has not
// exited within 10 s.
func (c *child) shutdown() {
	c.closeConns()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		c.kill()
	}
}

func (c *child) kill() {
	c.cmd.Process.Kill()
	<-c.exited
}

func (c *child) closeConns() {
	if c.client != nil {
		c.client.Close()
	}
	for _, conn := range c.conns {
		conn.Close()
	}
}

// socketPair returns both ends of a connected Unix stream socket pair: this process's as a
// net.Conn and the child's as a file to inherit.
func socketPair() (net.Conn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	local := os.NewFile(uintptr(fds[0]), "lake-host")
	remote := os.NewFile(uintptr(fds[1]), "lake-child")
	conn, err := net.FileConn(local) // a dup; local itself is closed here
	local.Close()
	if err != nil {
		remote.Close()
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return conn, remote, nil
}

// logLevel is the lowest level logger logs, for the child's --log-level.
func logLevel(l *slog.Logger) string {
	for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if l.Enabled(context.Background(), lv) {
			return lv.String()
		}
	}
	return slog.LevelError.String()
}
