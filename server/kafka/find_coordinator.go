package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (10): v0-v4. Groups only (key type 0); transaction coordinators are
// refused, as transactions are.
func init() { register(10, 0, 4, handleFindCoordinator) }

func handleFindCoordinator(_ context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	find := func(key string) (id int32, host string, port int32, code int16) {
		if r.CoordinatorType != 0 {
			return -1, "", -1, kerr.TransactionalIDAuthorizationFailed.Code
		}
		id, ok := s.coordinatorFor(req.conn, key)
		if !ok {
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code
		}
		e := s.opts.Cluster.Brokers(req.conn.listener, req.conn.localHost())[id]
		return id, e.Host, e.Port, 0
	}
	if req.ver >= 4 {
		for _, k := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = k
			c.NodeID, c.Host, c.Port, c.ErrorCode = find(k)
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil
	}
	resp.NodeID, resp.Host, resp.Port, resp.ErrorCode = find(r.CoordinatorKey)
	return resp, nil
}
