package remotelog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/server/config"
)

// Option names (Fluss ConfigOptions).
const (
	OptDataDir        = "remote.data.dir"
	OptTaskInterval   = "remote.log.task-interval-duration"
	OptTransferThread = "remote.log.data-transfer-thread-num"
)

// Config configures log tiering.
type Config struct {
	// Interval is remote.log.task-interval-duration (Fluss default 1 min): how often each
	// bucket's closed segments are copied. 0 disables tiering, as in Fluss: nothing more is
	// copied or deleted, and what is already tiered is still served.
	Interval time.Duration
	// Threads is remote.log.data-transfer-thread-num (Fluss default 4): buckets tiered at
	// once, which bounds the uploads in flight.
	Threads int
}

// ConfigFrom reads the options from the server's raw option map. It returns ok when
// remote.data.dir is set: the remote log is then served, and tiered unless the interval is 0.
func ConfigFrom(raw map[string]string) (c Config, ok bool, err error) {
	c = Config{Interval: time.Minute, Threads: 4}
	if v, set := raw[OptTaskInterval]; set && strings.TrimSpace(v) != "" {
		d, err := config.ParseDuration(v)
		if err != nil || d < 0 {
			return c, false, fmt.Errorf("%s: %q is not a duration", OptTaskInterval, v)
		}
		c.Interval = d
	}
	if v, set := raw[OptTransferThread]; set && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return c, false, fmt.Errorf("%s: %q is not a positive integer", OptTransferThread, v)
		}
		c.Threads = n
	}
	return c, strings.TrimSpace(raw[OptDataDir]) != "", nil
}
