package kafka

import (
	"errors"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/options"
)

// Config is the Kafka listener's configuration: Fluss's kafka.* options, declared in
// internal/options.
type Config struct {
	Enabled bool
	// ListenerNames are the tablet server listeners that speak Kafka instead of Fluss.
	ListenerNames []string
	// Database holds the topics: topic t is the log table Database.t.
	Database string
	// MaxIdleTime closes a connection without a request for this long (0: never).
	MaxIdleTime time.Duration
}

// ConfigFrom reads the kafka.* options from a server's raw options.
func ConfigFrom(raw map[string]string) (Config, error) {
	var c Config
	var err error
	if c.Enabled, err = options.KafkaEnabled.Get(raw); err != nil {
		return c, err
	}
	names, err := options.KafkaListenerNames.Get(raw)
	if err != nil {
		return c, err
	}
	for _, n := range names {
		c.ListenerNames = append(c.ListenerNames, strings.ToUpper(n))
	}
	if len(c.ListenerNames) == 0 {
		return c, errors.New("option kafka.listener.names: no listener named")
	}
	if c.Database, err = options.KafkaDatabase.Get(raw); err != nil {
		return c, err
	}
	if c.MaxIdleTime, err = options.KafkaConnectionMaxIdleTime.Get(raw); err != nil {
		return c, err
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
