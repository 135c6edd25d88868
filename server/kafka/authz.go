package kafka

import (
	"net"

	"github.com/stromdb/strom/server/auth"
)

// allowed checks an operation against Strom's authorizer with the connection's principal, as
// the Fluss listeners do: topics are table resources, CreateTopics needs CREATE on the
// database, groups need nothing beyond the topics' READ.
func (c *conn) allowed(op auth.Operation, r auth.Resource) bool {
	a := c.s.opts.Authorizer
	if a == nil {
		return true
	}
	host, _, _ := net.SplitHostPort(c.nc.RemoteAddr().String())
	return a.Allowed(auth.Session{Principal: auth.PrincipalOf(c.principal), Host: host}, op, r)
}
