package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/config"
)

// fdFloodAddrs is what the server child tells the test about itself.
type fdFloodAddrs struct {
	Coordinator, Tablet, Kafka, HTTP string
}

// TestIdleConnectionFloodUnderLowFDLimit starts a node as a child process under
// RLIMIT_NOFILE 1024 (ulimit -n 1024) and opens 1,200 idle TCP connections to its Fluss and
// Kafka listeners from this process: the connections beyond the node's budget are refused
// and counted, the clients connected before the flood keep being served (etcd writes
// included), descriptors stay free for storage, and the node never stops.
func TestIdleConnectionFloodUnderLowFDLimit(t *testing.T) {
	if os.Getenv("STROM_FD_FLOOD_CHILD") != "" {
		runFDFloodChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleConnectionFloodUnderLowFDLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STROM_FD_FLOOD_CHILD=1", "STROM_TEST_TMP="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	childDone := false
	defer func() {
		if !childDone {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(stdout)
	var addrs fdFloodAddrs
	for lines.Scan() {
		if s, ok := strings.CutPrefix(lines.Text(), "ADDRS "); ok {
			if err := json.Unmarshal([]byte(s), &addrs); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if addrs.Coordinator == "" {
		cmd.Wait()
		t.Fatalf("child printed no addresses:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)

	// Clients established before the flood.
	fluss, err := wire.Dial(context.Background(), addrs.Coordinator, wire.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer fluss.Close()
	createDatabase := func(name string) error { return createDatabaseOn(fluss, name) }
	if err := createDatabase("before_flood"); err != nil {
		t.Fatal(err)
	}
	kafkaConn, err := net.Dial("tcp", addrs.Kafka)
	if err != nil {
		t.Fatal(err)
	}
	defer kafkaConn.Close()
	if err := kafkaAPIVersions(kafkaConn, 1); err != nil {
		t.Fatal("kafka before the flood:", err)
	}
	m := scrapeMetrics(t, addrs.HTTP)
	limit, maxConns := m["strom_fd_limit"], m["strom_connections_max"]
	if limit != 1024 || maxConns <= 0 || maxConns >= 1024 {
		t.Fatalf("budget under ulimit -n 1024: fd limit %v, connection limit %v", limit, maxConns)
	}

	const flood = 1200
	targets := []string{addrs.Coordinator, addrs.Tablet, addrs.Kafka}
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.Dial("tcp", targets[i%len(targets)])
		if err != nil {
			t.Fatalf("dial %d: %v", i, err) // the kernel's backlog accepts them; the server decides
		}
		idle = append(idle, c)
	}
	// Every connection is either held or refused once the server has accepted them all.
	wantRefused := float64(flood) - (maxConns - 2)
	for m = scrapeMetrics(t, addrs.HTTP); m["strom_connections_refused_total"] < wantRefused; m = scrapeMetrics(t, addrs.HTTP) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("under the flood: %v connections open (limit %v), %v refused, %v descriptors open of %v",
		m["strom_connections_open"], maxConns, m["strom_connections_refused_total"], m["strom_fd_open"], limit)
	if m["strom_connections_open"] != maxConns {
		t.Fatalf("%v connections open under the flood, want the limit %v", m["strom_connections_open"], maxConns)
	}
	if free := limit - m["strom_fd_open"]; free < 256 {
		t.Fatalf("only %v descriptors left for storage under the flood (%v open of %v)", free, m["strom_fd_open"], limit)
	}

	// The established clients are served, metadata (etcd) writes included.
	for i := range 20 {
		if err := createDatabase(fmt.Sprintf("under_flood_%d", i)); err != nil {
			t.Fatalf("established client under the flood: %v", err)
		}
	}
	if err := kafkaAPIVersions(kafkaConn, 2); err != nil {
		t.Fatal("established kafka client under the flood:", err)
	}
	// A client beyond the limit is refused: closed without an answer.
	extra, err := wire.Dial(context.Background(), addrs.Coordinator, wire.ClientConfig{})
	if err == nil {
		err = createDatabaseOn(extra, "beyond_limit")
		extra.Close()
	}
	if err == nil {
		t.Fatal("a connection beyond the limit was served")
	}
	if !strings.Contains(stderr.String(), "connection limit reached") {
		t.Fatalf("refusals not logged:\n%s", stderr.String())
	}

	// Once the flood goes away, new clients are served again.
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	for attempt := 0; ; attempt++ {
		c, err := wire.Dial(context.Background(), addrs.Coordinator, wire.ClientConfig{})
		if err == nil {
			err = createDatabaseOn(c, "after_flood")
			c.Close()
		}
		if err == nil {
			break
		}
		if attempt%100 == 99 {
			t.Logf("after the flood, still refused: %v (%v connections open)", err, scrapeMetrics(t, addrs.HTTP)["strom_connections_open"])
		}
		time.Sleep(50 * time.Millisecond)
	}

	stdin.Close() // the child checks that the node never stopped, and closes it
	err = cmd.Wait()
	childDone = true
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "too many open files") {
		t.Fatalf("the node ran out of descriptors:\n%s", stderr.String())
	}
}

// runFDFloodChild is the server side of TestIdleConnectionFloodUnderLowFDLimit: a node under
// RLIMIT_NOFILE 1024 that serves until its stdin closes, then exits 0 only if it never
// stopped on its own.
func runFDFloodChild() {
	fail := func(err error) { fmt.Fprintln(os.Stderr, "child:", err); os.Exit(2) }
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 1024, Max: 1024}); err != nil {
		fail(err)
	}
	cfg := config.Default()
	cfg.DataDir = os.Getenv("STROM_TEST_TMP")
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	for k, v := range map[string]string{
		"tablet-server.bind.listeners": "FLUSS://127.0.0.1:0, KAFKA://127.0.0.1:0",
		"kafka.enabled":                "true",
		"http.listen":                  "127.0.0.1:0",
	} {
		if err := cfg.Set(k, v); err != nil {
			fail(err)
		}
	}
	n, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		fail(err)
	}
	b, _ := json.Marshal(fdFloodAddrs{Coordinator: n.Addr("coordinator"), Tablet: n.Addr("tablet-server"), Kafka: n.Addr("kafka"), HTTP: n.HTTPAddr()})
	fmt.Printf("ADDRS %s\n", b)
	io.Copy(io.Discard, os.Stdin)
	select {
	case <-n.Failed():
		fail(fmt.Errorf("the node stopped on its own: %v", n.Close()))
	default:
	}
	if err := n.Close(); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// createDatabaseOn creates a database through c (a metadata write to etcd).
func createDatabaseOn(c *wire.ClientConn, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Call(ctx, wire.CreateDatabase, &flusspb.CreateDatabaseRequest{DatabaseName: proto.String(name), IgnoreIfExists: proto.Bool(true)}, &flusspb.CreateDatabaseResponse{})
}

// kafkaAPIVersions sends a Kafka ApiVersions v0 request with correlation id corr on c and
// reads its answer.
func kafkaAPIVersions(c net.Conn, corr int32) error {
	req := make([]byte, 4+10)
	binary.BigEndian.PutUint32(req, 10)
	binary.BigEndian.PutUint16(req[4:], 18) // ApiVersions
	binary.BigEndian.PutUint16(req[6:], 0)
	binary.BigEndian.PutUint32(req[8:], uint32(corr))
	binary.BigEndian.PutUint16(req[12:], 0xffff) // null client id
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(req); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return fmt.Errorf("answer to correlation id %d, want %d", got, corr)
	}
	_, err := io.CopyN(io.Discard, c, int64(size)-4)
	return err
}

// scrapeMetrics reads the node's unlabelled-by-name metrics: name → value (the strom_* ones
// carry only the node's labels).
func scrapeMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "strom_") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		if i := strings.LastIndexByte(rest, ' '); i >= 0 {
			rest = rest[i+1:]
		}
		v, err := strconv.ParseFloat(rest, 64)
		if err == nil {
			out[name] = v
		}
	}
	return out
}
