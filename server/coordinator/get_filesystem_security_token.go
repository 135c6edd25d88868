package coordinator

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

func init() {
	metadataAPIs.readOnly(wire.GetFilesystemSecurityToken, 0, 0, (*metadataService).handleGetFileSystemSecurityToken)
}

// handleGetFileSystemSecurityToken answers the remote store's scheme and what a client needs
// to open its objects (remote.Storage.Token: nothing for a file store).
func (s *metadataService) handleGetFileSystemSecurityToken(ctx context.Context, req *wire.Request) (proto.Message, error) {
	if s.remote == nil {
		return &flusspb.GetFileSystemSecurityTokenResponse{Schema: proto.String("file"), Token: []byte{}}, nil
	}
	t := s.remote.Token()
	resp := &flusspb.GetFileSystemSecurityTokenResponse{Schema: proto.String(t.Scheme), Token: t.Token, ExpirationTime: t.ExpirationTime}
	for _, k := range slices.Sorted(maps.Keys(t.AdditionInfo)) {
		resp.AdditionInfo = append(resp.AdditionInfo, &flusspb.PbKeyValue{Key: proto.String(k), Value: proto.String(t.AdditionInfo[k])})
	}
	return resp, nil
}
