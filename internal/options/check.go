package options

import (
	"fmt"
	"strings"
)

// CheckDynamic validates a change of key to value by ALTER_CLUSTER_CONFIGS: key must be one
// Fluss lets change at runtime (Dynamic) and value must parse as its type. The caller wraps
// the error in the error code it answers with.
func CheckDynamic(key, value string) error {
	o, ok := Lookup(key)
	if !ok || !o.Dynamic {
		return fmt.Errorf("the config key %s is not allowed to be changed dynamically", key)
	}
	if err := o.Check(value); err != nil {
		return fmt.Errorf("could not parse value '%s' for key '%s': %w", value, key, err)
	}
	return nil
}

// sensitiveWords mark keys whose values are secrets even when no declaration says so (the
// options of a prefix family, a catalog's credentials).
var sensitiveWords = []string{"password", "secret", "jaas.config", "credentials", "token", "access-key", "access.key"}

// Sensitive reports whether the value of key must never be shown back (DESCRIBE_CLUSTER_CONFIGS,
// logs): a Password option, or a key naming a secret.
func Sensitive(key string) bool {
	if o, ok := byKey[key]; ok && o.Type == Password {
		return true
	}
	k := strings.ToLower(key)
	for _, w := range sensitiveWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}
