package kvsnap

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/server/config"
)

// Config configures KV snapshots, with Fluss's option names.
type Config struct {
	// RemoteDir is where snapshot files live (remote.data.dir); a local directory, handed to
	// clients as file:// paths. Default: <data dir>/remote.
	RemoteDir string
	// Interval is the period of snapshots (kv.snapshot.interval, default 10 min as in Fluss).
	Interval time.Duration
	// NumRetained is how many newest snapshots per bucket are kept besides leased ones
	// (kv.snapshot.num-retained, default 2 as in Fluss).
	NumRetained int
}

// ConfigFrom reads the options from the server's raw option map.
func ConfigFrom(raw map[string]string, dataDir string) (Config, error) {
	c := Config{RemoteDir: filepath.Join(dataDir, "remote"), Interval: 10 * time.Minute, NumRetained: 2}
	if v, ok := raw["remote.data.dir"]; ok && v != "" {
		dir, err := localPath(v)
		if err != nil {
			return c, fmt.Errorf("remote.data.dir: %w", err)
		}
		c.RemoteDir = dir
	}
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

// localPath accepts a plain path or a file:// URL; other schemes need a filesystem Strom does
// not have.
func localPath(v string) (string, error) {
	if !strings.Contains(v, "://") {
		return filepath.Abs(v)
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", err
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("scheme %q is not supported (only local directories and file://)", u.Scheme)
	}
	return filepath.Abs(u.Path)
}

// fileURL is the file:// URL of a local absolute path, as Fluss's FileSystem reads it.
func fileURL(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }
