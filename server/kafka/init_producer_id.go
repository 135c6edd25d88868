package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/internal/record"
)

// InitProducerId (22): v0-v4. An idempotent producer gets a cluster-unique id from the same
// counter as Fluss writer ids (INIT_WRITER) with record.RecordSequencedWriter set, so the logs
// check its sequences by record, as Kafka counts them; always epoch 0 (a producer asking for a
// bump gets a new id). Transactional producers are refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// is what clients report without retrying).
func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	id, err := s.opts.IDs.NextID(ctx, "writer")
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id|record.RecordSequencedWriter, 0
	return resp, nil
}
