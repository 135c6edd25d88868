package coordinator

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
)

// The coordinator's API tables. Each API's file registers, in an init function next to its
// handler, its key, the versions it serves and what each version changes (the layout of
// franz-go's kfake). Two tables, as Fluss splits its gateways: the admin APIs only a
// coordinator serves (AdminGateway; on a standby they are forwarded to the active
// coordinator), and the read-only metadata APIs both server roles serve
// (AdminReadOnlyGateway). Every coordinator API has only version 0 in Fluss 0.9.

// coordinatorHandler is a handler as a method expression of Coordinator.
type coordinatorHandler func(c *Coordinator, ctx context.Context, req *wire.Request) (proto.Message, error)

type coordinatorAPI struct {
	versions wire.VersionRange
	handle   coordinatorHandler
}

var (
	adminAPIs    = map[wire.APIKey]coordinatorAPI{}
	readOnlyAPIs = map[wire.APIKey]coordinatorAPI{}
)

// registerAdmin declares a coordinator-only API, served in versions [minV, maxV] by h.
func registerAdmin(key wire.APIKey, minV, maxV int16, h coordinatorHandler) {
	registerIn(adminAPIs, key, minV, maxV, h)
}

// registerReadOnly declares a metadata API that both server roles serve.
func registerReadOnly(key wire.APIKey, minV, maxV int16, h coordinatorHandler) {
	registerIn(readOnlyAPIs, key, minV, maxV, h)
}

func registerIn(table map[wire.APIKey]coordinatorAPI, key wire.APIKey, minV, maxV int16, h coordinatorHandler) {
	_, inAdmin := adminAPIs[key]
	_, inReadOnly := readOnlyAPIs[key]
	if inAdmin || inReadOnly {
		panic(fmt.Sprintf("coordinator: %s registered twice", key))
	}
	table[key] = coordinatorAPI{versions: wire.VersionRange{Min: minV, Max: maxV}, handle: h}
}

// bind turns a method expression into a handler of c.
func (c *Coordinator) bind(h coordinatorHandler) wire.Handler {
	return func(ctx context.Context, req *wire.Request) (proto.Message, error) { return h(c, ctx, req) }
}

// RegisterAdmin installs the coordinator-only APIs on svc; a standby forwards them to the
// active coordinator (adminHandler).
func (c *Coordinator) RegisterAdmin(svc *wire.Service) {
	for key, api := range adminAPIs {
		svc.Handle(key, api.versions, c.adminHandler(c.bind(api.handle)))
	}
}

// RegisterReadOnly installs the metadata APIs that both roles serve.
func (c *Coordinator) RegisterReadOnly(svc *wire.Service) {
	for key, api := range readOnlyAPIs {
		svc.Handle(key, api.versions, c.bind(api.handle))
	}
}
