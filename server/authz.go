package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/meta"
)

// openAuthorizer returns the ACL authorizer when authorizer.enabled is true (nil otherwise)
// and the internal listener name (internal.listener.name, default FLUSS), whose requests
// Fluss never authorises.
func openAuthorizer(ctx context.Context, cfg config.Config, store meta.Store) (*auth.Authorizer, string, error) {
	internal := cfg.Raw["internal.listener.name"]
	if internal == "" {
		internal = "FLUSS"
	}
	enabled, err := boolOption(cfg, "authorizer.enabled")
	if err != nil || !enabled {
		return nil, internal, err
	}
	if t := cfg.Raw["authorizer.type"]; t != "" && t != "default" {
		return nil, "", fmt.Errorf("option authorizer.type: only the default authorizer exists, got %q", t)
	}
	ignoreCase, err := boolOption(cfg, "security.acl.principal.ignore-case")
	if err != nil {
		return nil, "", err
	}
	a, err := auth.NewAuthorizer(ctx, store, auth.AuthorizerOptions{SuperUsers: cfg.Raw["super.users"], IgnoreCase: ignoreCase})
	if err != nil {
		return nil, "", err
	}
	return a, internal, nil
}

func boolOption(cfg config.Config, key string) (bool, error) { return boolOptionOr(cfg, key, false) }

// boolOptionOr reads a boolean option, def when it is not set.
func boolOptionOr(cfg config.Config, key string, def bool) (bool, error) {
	v, ok := cfg.Raw[key]
	if !ok || v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("option %s: %q is not a boolean", key, v)
	}
	return b, nil
}

func durationOption(cfg config.Config, key string) (time.Duration, error) {
	v, ok := cfg.Raw[key]
	if !ok || v == "" {
		return 0, nil
	}
	d, err := config.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("option %s: %w", key, err)
	}
	return d, nil
}
