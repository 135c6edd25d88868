// Package peers is the control plane's client side of the server-to-server RPCs
// (NOTIFY_LEADER_AND_ISR, CONTROLLED_SHUTDOWN): one connection per internal listener.
package peers

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/internalconn"
)

// Pool keeps one connection per internal address, dialled on first use and again after it
// broke.
type Pool struct {
	dial  internalconn.Func
	mu    sync.Mutex
	conns map[string]*wire.ClientConn
}

// NewPool returns an empty pool that dials in the clear.
func NewPool() *Pool { return NewPoolDialing(nil) }

// NewPoolDialing returns an empty pool that dials with dial (the node's cluster credentials,
// internalconn); nil dials in the clear.
func NewPoolDialing(dial internalconn.Func) *Pool {
	if dial == nil {
		dial = (*internalconn.Dialer)(nil).Func()
	}
	return &Pool{dial: dial, conns: map[string]*wire.ClientConn{}}
}

// Call sends req to the server at addr and decodes its answer into resp. A connection that
// fails a call with UNKNOWN_SERVER_ERROR (the transport broke) is dropped, so the next call
// dials again.
func (p *Pool) Call(ctx context.Context, addr string, key wire.APIKey, req, resp proto.Message) error {
	p.mu.Lock()
	cc := p.conns[addr]
	p.mu.Unlock()
	if cc == nil || cc.Err() != nil {
		var err error
		if cc, err = p.dial(ctx, addr, "strom-server"); err != nil {
			return err
		}
		p.mu.Lock()
		if old := p.conns[addr]; old != nil {
			old.Close()
		}
		p.conns[addr] = cc
		p.mu.Unlock()
	}
	err := cc.Call(ctx, key, req, resp)
	if err != nil && ferr.CodeOf(err) == ferr.UnknownServerError {
		p.mu.Lock()
		if p.conns[addr] == cc {
			delete(p.conns, addr)
		}
		p.mu.Unlock()
		cc.Close()
	}
	return err
}

// Close closes every connection.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, cc := range p.conns {
		cc.Close()
		delete(p.conns, a)
	}
}
