// Package testserver starts an in-process Strom server for tests. It is the implementation
// behind package flusstest (a module of its own, so that importing package fluss never
// brings the server into a build) and is used directly by the client's own tests.
package testserver

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// Server is a running in-process Strom node.
type Server struct {
	// Bootstrap is the coordinator address to pass as fluss.Config.BootstrapServers.
	Bootstrap string
	node      *server.Node
	dir       string // removed by Close when the server created it
}

// Start starts a single-node server with its data in a temporary directory of t, on
// loopback ports chosen by the OS, and stops it when the test ends. mutate, if non-nil, may
// adjust the configuration before start.
func Start(t testing.TB, mutate func(*config.Config)) *Server {
	t.Helper()
	s, err := start(t.TempDir(), mutate)
	if err != nil {
		t.Fatalf("start strom: %v", err)
	}
	t.Cleanup(func() { s.node.Close() })
	return s
}

// New starts a server like Start, for a TestMain (which has no testing.TB): its data goes to
// a fresh temporary directory that Close removes.
func New(mutate func(*config.Config)) (*Server, error) {
	dir, err := os.MkdirTemp("", "strom-test-")
	if err != nil {
		return nil, err
	}
	s, err := start(dir, mutate)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.dir = dir
	return s, nil
}

func start(dir string, mutate func(*config.Config)) (*Server, error) {
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	if mutate != nil {
		mutate(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	node, err := server.Start(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	return &Server{Bootstrap: node.Addr("coordinator"), node: node}, nil
}

// Close stops the server (also done automatically at the end of the test for Start).
func (s *Server) Close() error {
	err := s.node.Close()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	return err
}
