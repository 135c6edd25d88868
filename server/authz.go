package server

import (
	"context"

	"github.com/stromdb/strom/internal/options"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/meta"
)

// openAuthorizer returns the ACL authorizer when authorizer.enabled is true (nil otherwise)
// and the internal listener name (internal.listener.name, default FLUSS), whose requests
// Fluss never authorises. The options are read through their registry accessors
// (internal/options); config.Config.Set has already refused bad values at start.
func openAuthorizer(ctx context.Context, cfg config.Config, store meta.Store) (*auth.Authorizer, string, error) {
	internal, err := options.InternalListenerName.Get(cfg.Raw)
	if err != nil {
		return nil, "", err
	}
	enabled, err := options.AuthorizerEnabled.Get(cfg.Raw)
	if err != nil || !enabled {
		return nil, internal, err
	}
	if _, err := options.AuthorizerType.Get(cfg.Raw); err != nil {
		return nil, "", err
	}
	ignoreCase, err := options.ACLIgnoreCase.Get(cfg.Raw)
	if err != nil {
		return nil, "", err
	}
	superUsers, err := options.SuperUsers.Get(cfg.Raw)
	if err != nil {
		return nil, "", err
	}
	a, err := auth.NewAuthorizer(ctx, store, auth.AuthorizerOptions{SuperUsers: superUsers, IgnoreCase: ignoreCase})
	if err != nil {
		return nil, "", err
	}
	return a, internal, nil
}
