package coordinator

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
)

// The coordinator's API tables. Every service has one (an apiTable of its own type), and each
// API's file adds its entry to it, in an init function next to the handler: its key, the
// versions it serves and which of the two tables Fluss puts it in (the layout of franz-go's
// kfake). The two tables are Fluss's gateways: the admin APIs only a coordinator serves
// (AdminGateway; on a standby they are forwarded to the active coordinator, forward.go), and
// the read-only metadata APIs both server roles serve (AdminReadOnlyGateway). Every
// coordinator API has only version 0 in Fluss 0.9.

// gateway says which table an API belongs to.
type gateway int

const (
	adminGateway    gateway = iota // coordinator only; forwarded by a standby
	readOnlyGateway                // served by both roles
)

// apiHandler is a handler as a method expression of the service type S.
type apiHandler[S any] func(s S, ctx context.Context, req *wire.Request) (proto.Message, error)

type apiEntry[S any] struct {
	key      wire.APIKey
	versions wire.VersionRange
	gateway  gateway
	handle   apiHandler[S]
}

// apiTable is the API table of one service of type S.
type apiTable[S any] struct{ entries []apiEntry[S] }

// registeredKeys holds every key any table declares: a key served by two services is a
// programming error, caught when the package initialises.
var registeredKeys = map[wire.APIKey]bool{}

func (t *apiTable[S]) add(key wire.APIKey, minV, maxV int16, g gateway, h apiHandler[S]) {
	if registeredKeys[key] {
		panic(fmt.Sprintf("coordinator: %s registered twice", key))
	}
	registeredKeys[key] = true
	t.entries = append(t.entries, apiEntry[S]{key: key, versions: wire.VersionRange{Min: minV, Max: maxV}, gateway: g, handle: h})
}

// admin declares a coordinator-only API, served in versions [minV, maxV] by h.
func (t *apiTable[S]) admin(key wire.APIKey, minV, maxV int16, h apiHandler[S]) {
	t.add(key, minV, maxV, adminGateway, h)
}

// readOnly declares a metadata API that both server roles serve.
func (t *apiTable[S]) readOnly(key wire.APIKey, minV, maxV int16, h apiHandler[S]) {
	t.add(key, minV, maxV, readOnlyGateway, h)
}

// boundAPI is an API entry bound to its service.
type boundAPI struct {
	key      wire.APIKey
	versions wire.VersionRange
	gateway  gateway
	handler  wire.Handler
}

// bind binds every entry of t to the service s.
func (t *apiTable[S]) bind(s S) []boundAPI {
	out := make([]boundAPI, 0, len(t.entries))
	for _, e := range t.entries {
		h := e.handle
		out = append(out, boundAPI{key: e.key, versions: e.versions, gateway: e.gateway,
			handler: func(ctx context.Context, req *wire.Request) (proto.Message, error) { return h(s, ctx, req) }})
	}
	return out
}

// RegisterAdmin installs the coordinator-only APIs on svc; a standby forwards them to the
// active coordinator (forward.go).
func (c *Coordinator) RegisterAdmin(svc *wire.Service) {
	for _, api := range c.apis() {
		if api.gateway == adminGateway {
			svc.Handle(api.key, api.versions, c.fwd.wrap(api.handler))
		}
	}
}

// RegisterReadOnly installs the metadata APIs that both roles serve.
func (c *Coordinator) RegisterReadOnly(svc *wire.Service) {
	for _, api := range c.apis() {
		if api.gateway == readOnlyGateway {
			svc.Handle(api.key, api.versions, api.handler)
		}
	}
}
