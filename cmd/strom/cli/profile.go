package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// The CLI config file holds named connection profiles:
//
//	profile: local                  # used when neither --profile nor $STROM_PROFILE names one
//	profiles:
//	  local:
//	    bootstrap: 127.0.0.1:9123
//	  prod:
//	    bootstrap: fluss-1:9123,fluss-2:9123
//	    user: alice
//	    password: secret
//	    timeout: 10s
//
// It is $STROM_CONFIG, else $XDG_CONFIG_HOME/strom/config.yaml, else
// ~/.config/strom/config.yaml. Each setting comes from the first of: its flag, its
// environment variable, the profile, the default.

// cliConfig is the config file.
type cliConfig struct {
	Profile  string             `yaml:"profile"`
	Profiles map[string]profile `yaml:"profiles"`
}

// profile is one named set of connection settings.
type profile struct {
	Bootstrap string `yaml:"bootstrap"`
	User      string `yaml:"user"`
	Password  string `yaml:"password"`
	Timeout   string `yaml:"timeout"`
}

const defaultBootstrap = "127.0.0.1:9123"

// configPath is where the config file is looked for.
func configPath() string {
	if p := os.Getenv("STROM_CONFIG"); p != "" {
		return p
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "strom", "config.yaml")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "strom", "config.yaml")
}

// loadConfig reads the config file at path; a missing file is an empty config.
func loadConfig(path string) (cliConfig, error) {
	var c cliConfig
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // EOF: an empty file
		return c, fmt.Errorf("CLI config %s: %w", path, err)
	}
	return c, nil
}

// settings are the resolved connection settings and where the bootstrap came from.
type settings struct {
	bootstrap, user, password string
	timeout                   time.Duration
	from                      string // "--bootstrap", "$STROM_BOOTSTRAP", `profile "x" (path)`, "the default"
	warning                   string // printed once on stderr, e.g. a password in a readable file
}

// resolveSettings applies flag > environment > profile > default to every setting. flags
// are the root's persistent flags (Changed tells a given flag from its default); cur holds
// their values.
func resolveSettings(flags *pflag.FlagSet, cur settings, profileFlag string) (settings, error) {
	path := configPath()
	cfg, err := loadConfig(path)
	if err != nil {
		return cur, usageError{err}
	}
	name, named := profileFlag, "--profile"
	if name == "" {
		name, named = os.Getenv("STROM_PROFILE"), "$STROM_PROFILE"
	}
	if name == "" {
		name, named = cfg.Profile, "the config's profile key"
	}
	var p profile
	if name != "" {
		var ok bool
		if p, ok = cfg.Profiles[name]; !ok {
			known := slices.Sorted(maps.Keys(cfg.Profiles))
			if len(known) == 0 {
				return cur, usagef("profile %q (from %s): %s defines no profiles", name, named, orPath(path))
			}
			return cur, usagef("profile %q (from %s) is not in %s (profiles: %s)", name, named, orPath(path), strings.Join(known, ", "))
		}
	}
	out := cur
	from := func(flag, env, prof, def string) (string, string) {
		switch {
		case flags.Changed(flag):
			return flagValue(flags, flag), "--" + flag
		case env != "" && os.Getenv(env) != "":
			return os.Getenv(env), "$" + env
		case prof != "":
			return prof, fmt.Sprintf("profile %q in %s", name, path)
		}
		return def, "the default"
	}
	out.bootstrap, out.from = from("bootstrap", "STROM_BOOTSTRAP", p.Bootstrap, defaultBootstrap)
	out.user, _ = from("user", "STROM_USER", p.User, "")
	out.password, _ = from("password", "STROM_PASSWORD", p.Password, "")
	if !flags.Changed("timeout") && p.Timeout != "" {
		d, err := time.ParseDuration(p.Timeout)
		if err != nil || d <= 0 {
			return cur, usagef("profile %q in %s: timeout %q is not a duration such as 10s", name, path, p.Timeout)
		}
		out.timeout = d
	}
	if p.Password != "" {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			out.warning = fmt.Sprintf("strom: warning: %s holds a password and is readable by others (chmod 600 %s)", path, path)
		}
	}
	return out, nil
}

func flagValue(flags *pflag.FlagSet, name string) string {
	if f := flags.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func orPath(path string) string {
	if path == "" {
		return "the CLI config file (no home directory)"
	}
	return path
}
