package cli

import (
	"os/exec"
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
