package coordinator

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
	"github.com/stromdb/strom/server/auth"
)

func init() {
	clusterConfigAPIs.readOnly(wire.DescribeClusterConfigs, 0, 0, (*clusterConfigs).handleDescribeClusterConfigs)
}

func (cc *clusterConfigs) handleDescribeClusterConfigs(ctx context.Context, req *wire.Request) (proto.Message, error) {
	var r flusspb.DescribeClusterConfigsRequest
	if err := req.Decode(&r); err != nil {
		return nil, err
	}
	if err := cc.access.authorize(req, auth.OpDescribe, auth.ClusterResource()); err != nil {
		return nil, err
	}
	dynamic := cc.dynamic()
	resp := &flusspb.DescribeClusterConfigsResponse{}
	for _, k := range slices.Sorted(maps.Keys(cc.static)) {
		if _, ok := dynamic[k]; ok {
			continue
		}
		resp.Configs = append(resp.Configs, &flusspb.PbDescribeConfig{ConfigKey: proto.String(k),
			ConfigValue: proto.String(redactConfig(k, cc.static[k])), ConfigSource: proto.String("INITIAL_SERVER_CONFIG")})
	}
	for _, k := range slices.Sorted(maps.Keys(dynamic)) {
		resp.Configs = append(resp.Configs, &flusspb.PbDescribeConfig{ConfigKey: proto.String(k),
			ConfigValue: proto.String(redactConfig(k, dynamic[k])), ConfigSource: proto.String("DYNAMIC_SERVER_CONFIG")})
	}
	return resp, nil
}
