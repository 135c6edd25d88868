package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// examples returns the example command lines of cmd and its subcommands, continuation lines
// joined, as `--help` prints them.
func examples(cmd *cobra.Command) map[string]string {
	out := map[string]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		var lines []string
		for line := range strings.Lines(c.Example) {
			lines = append(lines, strings.TrimRight(line, "\n"))
		}
		out[c.CommandPath()] = strings.Join(lines, "\n")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
	return out
}

// Every --help example pastes into bash as printed: `bash -n` parses it without a syntax
// error (unquoted DECIMAL(10,2) is one).
func TestHelpExamplesParseInBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	for path, ex := range examples((&app{}).rootCommand()) {
		if ex == "" {
			continue
		}
		out, err := exec.Command(bash, "-n", "-c", ex).CombinedOutput()
		if err != nil {
			t.Errorf("%s --help examples are not valid bash: %v\n%s\n%s", path, err, out, ex)
		}
	}
}

// Run as printed by bash, with strom replaced by a stub that records its arguments, every
// example names a real command with flags it has.
func TestHelpExamplesUseRealFlags(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "args")
	// One write per call: the two sides of a pipe run at once, and two writes per call could
	// interleave their lines.
	stub := `strom() { local IFS=$'\x1f'; printf '%s\n' "$*" >> "$STROM_ARGS"; }; gunzip() { :; }; `
	calls := 0
	for path, ex := range examples((&app{}).rootCommand()) {
		if ex == "" {
			continue
		}
		os.Remove(record)
		cmd := exec.Command(bash, "-c", stub+ex)
		cmd.Dir = dir // examples redirect into files
		cmd.Env = append(os.Environ(), "STROM_ARGS="+record)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s examples fail in bash: %v\n%s", path, err, out)
			continue
		}
		b, err := os.ReadFile(record)
		if err != nil {
			t.Errorf("%s examples never ran strom: %v", path, err)
			continue
		}
		for line := range strings.Lines(string(b)) {
			args := strings.Split(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\x1f"), "\x1f")
			root := (&app{}).rootCommand()
			c, rest, err := root.Find(args)
			if err == nil {
				err = c.ParseFlags(rest)
			}
			if err != nil {
				t.Errorf("%s example 'strom %s': %v", path, strings.Join(args, " "), err)
			}
			calls++
		}
	}
	if calls < 20 {
		t.Errorf("only %d example command lines ran", calls)
	}
}
