package tablet

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
)

// The tablet server's API tables. Every service has one (an apiTable of its own type), and
// each API's file adds its entry to it, in an init function next to the handler: its key, the
// versions it serves and what each version changes (the layout of franz-go's kfake).
// Server.Register installs them all, each behind its authorization check (authz.go). A
// handler sees only versions it registered (the wire layer answers others with
// UNSUPPORTED_VERSION) and branches on req.Header.APIVersion where the protocol differs
// between them.

// apiHandler is a handler as a method expression of the service type S.
type apiHandler[S any] func(s S, ctx context.Context, req *wire.Request) (proto.Message, error)

type apiEntry[S any] struct {
	key      wire.APIKey
	versions wire.VersionRange
	handle   apiHandler[S]
}

// apiTable is the API table of one service of type S.
type apiTable[S any] struct{ entries []apiEntry[S] }

// registeredKeys holds every key any table declares: a key served by two services is a
// programming error, caught when the package initialises.
var registeredKeys = map[wire.APIKey]bool{}

// register declares that the service serves key in versions [minV, maxV] with h. It runs
// from init functions.
func (t *apiTable[S]) register(key wire.APIKey, minV, maxV int16, h apiHandler[S]) {
	if registeredKeys[key] {
		panic(fmt.Sprintf("tablet: %s registered twice", key))
	}
	registeredKeys[key] = true
	t.entries = append(t.entries, apiEntry[S]{key: key, versions: wire.VersionRange{Min: minV, Max: maxV}, handle: h})
}

// boundAPI is an API entry bound to its service.
type boundAPI struct {
	key      wire.APIKey
	versions wire.VersionRange
	handler  wire.Handler
}

// bind binds every entry of t to the service s.
func (t *apiTable[S]) bind(s S) []boundAPI {
	out := make([]boundAPI, 0, len(t.entries))
	for _, e := range t.entries {
		h := e.handle
		out = append(out, boundAPI{key: e.key, versions: e.versions,
			handler: func(ctx context.Context, req *wire.Request) (proto.Message, error) { return h(s, ctx, req) }})
	}
	return out
}

// apis binds every service's table to the service.
func (s *Server) apis() []boundAPI {
	return slices.Concat(produceAPIs.bind(s.produce), fetchAPIs.bind(s.fetch), kvAPIs.bind(s.primaryKeys),
		bucketInfoAPIs.bind(s.bucketInfo))
}

// Register installs the tablet server's APIs on svc, each behind its authorization check.
func (s *Server) Register(svc *wire.Service) {
	for _, api := range s.apis() {
		svc.Handle(api.key, api.versions, s.access.guard(api.key, api.handler))
	}
	// A LOOKUP answers from Pebble on the connection's goroutine, or defers (inserts, reads
	// waiting for a new leader's barrier): pipelined lookups share their response writes.
	svc.MarkQuick(wire.Lookup)
}
