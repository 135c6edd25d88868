package tablet

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/cluster"
)

// The tablet server's API table. Each API's file registers, in an init function next to its
// handler, its key, the versions it serves and what each version changes (the layout of
// franz-go's kfake); Register installs them all. A handler sees only versions it registered
// (the wire layer answers others with UNSUPPORTED_VERSION) and branches on
// req.Header.APIVersion where the protocol differs between them.

// tabletHandler is a handler as a method expression of Server.
type tabletHandler func(s *Server, ctx context.Context, req *wire.Request) (proto.Message, error)

type tabletAPI struct {
	key      wire.APIKey
	versions wire.VersionRange
	handle   tabletHandler
}

var tabletAPIs = map[wire.APIKey]tabletAPI{}

// register declares that the tablet server serves key in versions [minV, maxV] with h. It runs
// from init functions; registering a key twice is a programming error.
func register(key wire.APIKey, minV, maxV int16, h tabletHandler) {
	if _, dup := tabletAPIs[key]; dup {
		panic(fmt.Sprintf("tablet: %s registered twice", key))
	}
	tabletAPIs[key] = tabletAPI{key: key, versions: wire.VersionRange{Min: minV, Max: maxV}, handle: h}
}

// Register installs the tablet server's APIs on svc, each behind its authorization check.
func (s *Server) Register(svc *wire.Service) {
	for key, api := range tabletAPIs {
		h := api.handle
		svc.Handle(key, api.versions, s.guard(key, func(ctx context.Context, req *wire.Request) (proto.Message, error) {
			return h(s, ctx, req)
		}))
	}
	// A LOOKUP answers from Pebble on the connection's goroutine, or defers (inserts, reads
	// waiting for a new leader's barrier): pipelined lookups share their response writes.
	svc.MarkQuick(wire.Lookup)
}

// checkKeyEncodingVersion refuses a version-0 PUT_KV, LOOKUP or PREFIX_LOOKUP on a table whose
// keys a version-0 client encodes differently from the server (upstream ReplicaManager
// validateClientVersionForPkTable): a lake table of kv format version 2 whose bucket key is not
// the primary key keeps its keys in the compacted encoding, while a version-0 client encodes
// them with the lake's encoder, so its keys would never match. Java answers the bucket with
// UNSUPPORTED_VERSION, and so does Strom.
func (s *Server) checkKeyEncodingVersion(b cluster.Bucket, version int16) error {
	if version > 0 {
		return nil
	}
	rep, err := s.replica(b)
	if err != nil {
		return nil // the request's own path answers a bucket that is not here
	}
	return keyEncodingVersionError(rep.Table, version)
}

// keyEncodingVersionError is checkKeyEncodingVersion for a table already resolved.
func keyEncodingVersionError(t *cluster.TableInfo, version int16) error {
	if version > 0 {
		return nil
	}
	d := &t.Descriptor
	if d.Properties.DataLakeFormat() == "" || d.Properties.KvFormatVersion() != 2 || d.IsDefaultBucketKey() {
		return nil
	}
	return ferr.New(ferr.UnsupportedVersion, "Client API version %d is not supported for table '%s': the table encodes its keys the kv format version 2 way, which needs version 1 or later. Upgrade the Fluss client.", version, t.Path)
}
