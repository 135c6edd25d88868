// Package flusstest starts an in-process Strom server for tests of code that uses package
// fluss:
//
//	func TestMyApp(t *testing.T) {
//		srv := flusstest.Start(t, nil)
//		conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: srv.Bootstrap})
//		...
//	}
//
// flusstest is a Go module of its own (github.com/stromdb/strom/fluss/flusstest): the server
// and its dependencies (etcd, Pebble, ...) enter a build only through it, so programs that
// import package fluss stay free of them. Import it from test files only.
package flusstest

import (
	"testing"

	"github.com/stromdb/strom/fluss/internal/testserver"
	"github.com/stromdb/strom/server/config"
)

// Server is a running in-process Strom node.
type Server = testserver.Server

// Start starts a single-node server with its data in a temporary directory of t, on loopback
// ports chosen by the OS, and stops it when the test ends. mutate, if non-nil, may adjust
// the server configuration before start.
func Start(t testing.TB, mutate func(*config.Config)) *Server {
	t.Helper()
	return testserver.Start(t, mutate)
}

// New starts a server like Start, for a TestMain (which has no testing.TB); Close stops it
// and removes its data.
func New(mutate func(*config.Config)) (*Server, error) { return testserver.New(mutate) }
