package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (18): v0-v3.
func init() { register(apiVersionsKey, 0, 3, handleAPIVersions) }

func handleAPIVersions(_ context.Context, _ *Server, req *request) (kmsg.Response, error) {
	return apiVersionsResponse(req.ver), nil
}

// apiVersionsResponse lists every registered API and its versions.
func apiVersionsResponse(ver int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(ver)
	keys := make([]int, 0, len(apis))
	for k := range apis {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		a := apis[int16(k)]
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: a.min, MaxVersion: a.max})
	}
	return resp
}
