package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake (17): v1 (the authentication bytes follow in SaslAuthenticate). PLAIN only,
// on listeners that security.protocol.map names sasl.
func init() { register(saslHandshakeKey, 1, 1, handleSaslHandshake) }

func handleSaslHandshake(_ context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.SASLHandshakeRequest)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = []string{"PLAIN"}
	switch {
	case req.conn.users == nil:
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case req.conn.authenticated:
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case r.Mechanism != "PLAIN":
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		req.conn.mechanism = r.Mechanism
	}
	return resp, nil
}
