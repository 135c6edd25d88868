package kafka

import (
	"fmt"
	"strings"
	"time"
)

// Option names, Fluss's (ConfigOptions.KAFKA_*).
const (
	OptEnabled       = "kafka.enabled"
	OptListenerNames = "kafka.listener.names"
	OptDatabase      = "kafka.database"
	OptMaxIdleTime   = "kafka.connection.max-idle-time"
)

// Config is the Kafka listener's configuration.
type Config struct {
	Enabled bool
	// ListenerNames are the tablet server listeners that speak Kafka instead of Fluss.
	ListenerNames []string
	// Database holds the topics: topic t is the log table Database.t.
	Database string
	// MaxIdleTime closes a connection without traffic for this long (0: never).
	MaxIdleTime time.Duration
}

// DefaultConfig returns Fluss's defaults.
func DefaultConfig() Config {
	return Config{ListenerNames: []string{"KAFKA"}, Database: "kafka", MaxIdleTime: 60 * time.Second}
}

// ConfigFrom reads the kafka.* options from the raw option map; parseDuration parses
// Fluss's durations.
func ConfigFrom(raw map[string]string, parseDuration func(string) (time.Duration, error)) (Config, error) {
	c := DefaultConfig()
	if v, ok := raw[OptEnabled]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			c.Enabled = true
		case "false":
			c.Enabled = false
		default:
			return c, fmt.Errorf("%s: %q is not true or false", OptEnabled, v)
		}
	}
	if v, ok := raw[OptListenerNames]; ok {
		c.ListenerNames = nil
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				c.ListenerNames = append(c.ListenerNames, strings.ToUpper(n))
			}
		}
		if len(c.ListenerNames) == 0 {
			return c, fmt.Errorf("%s: no listener named", OptListenerNames)
		}
	}
	if v, ok := raw[OptDatabase]; ok {
		if v = strings.TrimSpace(v); v == "" {
			return c, fmt.Errorf("%s: empty", OptDatabase)
		}
		c.Database = v
	}
	if v, ok := raw[OptMaxIdleTime]; ok {
		d, err := parseDuration(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", OptMaxIdleTime, err)
		}
		c.MaxIdleTime = d
	}
	return c, nil
}

// IsListener reports whether the listener named name speaks Kafka.
func (c Config) IsListener(name string) bool {
	if !c.Enabled {
		return false
	}
	for _, n := range c.ListenerNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
