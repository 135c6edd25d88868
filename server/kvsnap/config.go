package kvsnap

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/server/config"
)

// Config configures KV snapshots, with Fluss's option names. Where the files live is
// remote.data.dir, opened by the server (Options.Remote).
type Config struct {
	// Interval is the period of snapshots (kv.snapshot.interval, default 10 min as in Fluss).
	Interval time.Duration
	// NumRetained is how many newest snapshots per bucket are kept besides leased ones
	// (kv.snapshot.num-retained, default 2 as in Fluss).
	NumRetained int
}

// ConfigFrom reads the options from the server's raw option map.
func ConfigFrom(raw map[string]string) (Config, error) {
	c := Config{Interval: 10 * time.Minute, NumRetained: 2}
	if v, ok := raw["kv.snapshot.interval"]; ok {
		d, err := config.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("kv.snapshot.interval: %q is not a positive duration", v)
		}
		c.Interval = d
	}
	if v, ok := raw["kv.snapshot.num-retained"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return c, fmt.Errorf("kv.snapshot.num-retained: %q is not a positive integer", v)
		}
		c.NumRetained = n
	}
	return c, nil
}

// fileURL is the file:// URL of a local absolute path, as Fluss's FileSystem reads it.
func fileURL(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }
