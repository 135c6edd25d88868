package coordinator

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

func init() {
	metadataAPIs.readOnly(wire.GetFilesystemSecurityToken, 0, 0, (*metadataService).handleGetFileSystemSecurityToken)
}

// handleGetFileSystemSecurityToken answers as Fluss does for a local remote-data directory:
// no credentials are needed.
func (s *metadataService) handleGetFileSystemSecurityToken(ctx context.Context, req *wire.Request) (proto.Message, error) {
	return &flusspb.GetFileSystemSecurityTokenResponse{Schema: proto.String("file"), Token: []byte{}}, nil
}
