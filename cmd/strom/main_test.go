package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stromdb/strom/cmd/strom/cli"
)

// strom runs the command line in-process and returns its exit code and both streams.
func strom(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// The server commands are part of the one command line: listed, documented through `help`,
// completed, and exiting 0 on -h and 2 on a bad flag as every other command does.
func TestServerCommandsShareTheCommandLine(t *testing.T) {
	code, out, _ := strom("--help")
	if code != 0 {
		t.Fatalf("strom --help: exit %d", code)
	}
	for _, name := range []string{"serve", "bench", "repair-log"} {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("strom --help does not list %s:\n%s", name, out)
		}
	}
	if strings.Contains(out, "single-node server") {
		t.Errorf("strom --help still calls serve a single-node server:\n%s", out)
	}
	_, out, _ = strom("__complete", "")
	for _, name := range []string{"serve", "bench", "repair-log"} {
		if !strings.Contains(out, name+"\t") {
			t.Errorf("completion does not offer %s:\n%s", name, out)
		}
	}
	// Help asked for is output, on stdout.
	for _, args := range [][]string{{"help", "serve"}, {"serve", "--help"}, {"serve", "-h"}, {"help", "bench"}, {"bench", "--help"}, {"help", "repair-log"}} {
		name := args[0]
		if name == "help" {
			name = args[1]
		}
		code, out, errOut := strom(args...)
		if code != 0 || !strings.Contains(out, "Usage: strom "+name) || errOut != "" {
			t.Errorf("strom %s: exit %d, stdout %q, stderr %q; want its usage on stdout", strings.Join(args, " "), code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"serve", "--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"serve", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"serve", "--set", "novalue"}, 2, "KEY=VALUE"},
		{[]string{"serve", "stray"}, 2, "no arguments"},
		{[]string{"bench", "--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"bench"}, 2, "no mode"},
		{[]string{"bench", "sideways"}, 2, "sideways"},
		{[]string{"repair-log"}, 2, "--bucket-dir"},
	} {
		code, _, errOut := strom(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("strom %s: exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.want)
		}
	}
}
