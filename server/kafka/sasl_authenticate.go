package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslAuthenticate (36): v0-v2. PLAIN checked against the listener's users, the same JAAS
// users as the Fluss listeners'. A failure is answered after a second, and closes the
// connection, as Kafka does.
func init() { register(saslAuthenticateKey, 0, 2, handleSaslAuthenticate) }

const authFailureDelay = time.Second

var errAuthFailed = errors.New("SASL authentication failed")

func handleSaslAuthenticate(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.SASLAuthenticateRequest)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	c := req.conn
	if req.conn.users == nil || c.authenticated || c.mechanism == "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	principal, err := c.users.Authenticate(c.mechanism, r.SASLAuthBytes)
	if err != nil {
		select {
		case <-time.After(authFailureDelay):
		case <-ctx.Done():
		}
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		c.closeAfter = true
		return resp, nil
	}
	c.principal, c.authenticated = principal, true
	return resp, nil
}
