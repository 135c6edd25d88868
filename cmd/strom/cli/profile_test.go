package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBare runs a command line as typed: no --bootstrap added.
func runBare(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := Run(ctx, args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return result{out: out.String(), err: errb.String(), code: code}
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// The connection settings come from the flag, else the environment, else the profile of
// the CLI config file (--profile, $STROM_PROFILE, or the file's default), else the default.
func TestProfilePrecedence(t *testing.T) {
	c := newCLI(t)
	good, bad := c.bootstrap, closedAddr(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(`profile: dflt
profiles:
  dflt: {bootstrap: "`+good+`"}
  good: {bootstrap: "`+good+`", timeout: 5s}
  bad:  {bootstrap: "`+bad+`", timeout: 2s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STROM_CONFIG", file)
	t.Setenv("STROM_BOOTSTRAP", "")
	t.Setenv("STROM_PROFILE", "")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"the file's default profile", nil, []string{"db", "ls"}, 0, ""},
		{"--profile", nil, []string{"--profile", "good", "db", "ls"}, 0, ""},
		{"-P picks an unreachable profile", nil, []string{"-P", "bad", "db", "ls"}, ExitUnreachable, `from profile "bad"`},
		{"$STROM_PROFILE", map[string]string{"STROM_PROFILE": "bad"}, []string{"db", "ls"}, ExitUnreachable, `from profile "bad"`},
		{"--profile beats $STROM_PROFILE", map[string]string{"STROM_PROFILE": "bad"}, []string{"--profile", "good", "db", "ls"}, 0, ""},
		{"env beats profile", map[string]string{"STROM_BOOTSTRAP": good}, []string{"-P", "bad", "db", "ls"}, 0, ""},
		{"flag beats env", map[string]string{"STROM_BOOTSTRAP": bad}, []string{"--bootstrap", good, "db", "ls"}, 0, ""},
		{"env is named when it fails", map[string]string{"STROM_BOOTSTRAP": bad}, []string{"--timeout", "2s", "db", "ls"}, ExitUnreachable, "from $STROM_BOOTSTRAP"},
		{"unknown profile", nil, []string{"--profile", "nope", "db", "ls"}, ExitUsage, "profiles: bad, dflt, good"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r := runBare(t, tc.args...)
			if r.code != tc.code || !strings.Contains(r.err, tc.msg) {
				t.Errorf("strom %s: exit %d, %q; want exit %d mentioning %q", strings.Join(tc.args, " "), r.code, r.err, tc.code, tc.msg)
			}
		})
	}
	// No config file at all: the default address, and --profile says there is none.
	t.Setenv("STROM_CONFIG", filepath.Join(dir, "missing.yaml"))
	if r := runBare(t, "--profile", "good", "db", "ls"); r.code != ExitUsage || !strings.Contains(r.err, "defines no profiles") {
		t.Errorf("--profile without a config file: exit %d, %q", r.code, r.err)
	}
	// A file that is not a config is a usage error naming the file.
	os.WriteFile(file, []byte("profiles: [1, 2]\n"), 0o600)
	t.Setenv("STROM_CONFIG", file)
	if r := runBare(t, "db", "ls"); r.code != ExitUsage || !strings.Contains(r.err, file) {
		t.Errorf("a broken config file: exit %d, %q", r.code, r.err)
	}
}

// A password in a config file others can read draws a warning.
func TestProfilePasswordWarning(t *testing.T) {
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(file, []byte("profile: p\nprofiles:\n  p: {bootstrap: \""+c.bootstrap+"\", user: u, password: pw}\n"), 0o644)
	t.Setenv("STROM_CONFIG", file)
	t.Setenv("STROM_BOOTSTRAP", "")
	t.Setenv("STROM_USER", "")
	t.Setenv("STROM_PASSWORD", "")
	t.Setenv("STROM_PROFILE", "")
	r := runBare(t, "db", "ls")
	if !strings.Contains(r.err, "chmod 600") {
		t.Errorf("no warning about a readable password file: exit %d, %q", r.code, r.err)
	}
}
