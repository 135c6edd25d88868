package rest

import (
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/rest/console"
)

// Mount adds the REST API (at Prefix) and the web console (at console.Path) to the HTTP
// listener of a started node, as a gateway to the node's own Fluss listener
// (server.Node.GatewayListener). It does nothing when http.rest.enabled is false or the node
// has no HTTP listener. The gateway closes with the node.
//
// Mounting happens here rather than in package server so that the server does not depend on
// the gateway (which uses the command line's value forms): the gateway is a client like any
// other, added by `strom serve`.
func Mount(n *server.Node, cfg config.Config, log *slog.Logger) error {
	if cfg.HTTP.RestDisabled || !cfg.HTTPEnabled() {
		return nil
	}
	addr, sasl := n.GatewayListener()
	if addr == "" {
		return nil
	}
	if len(cfg.HTTP.RestTokens) > 0 && !sasl {
		return fmt.Errorf("http.rest.tokens needs a SASL listener to log in to (the gateway's listener %s has no SASL)", addr)
	}
	tokens := map[[32]byte]string{}
	for sum, user := range cfg.HTTP.RestTokens {
		var d [32]byte
		b, _ := hex.DecodeString(sum) // validated by config
		copy(d[:], b)
		tokens[d] = user
	}
	g := New(Options{Bootstrap: addr, SASL: sasl, Tokens: tokens, Password: n.GatewayPassword, Status: n,
		MaxBodyBytes: cfg.HTTP.RestMaxRequestSize, Log: log.With("role", "rest")})
	if err := n.HandleHTTP(Prefix+"/", g.Handler(), func() { g.Close() }); err != nil {
		g.Close()
		return err
	}
	if err := n.HandleHTTP(console.Path, console.Handler(), nil); err != nil {
		return err
	}
	log.Info("REST gateway", "listener", addr, "sasl", sasl, "api", Prefix+"/", "console", console.Path)
	return nil
}
