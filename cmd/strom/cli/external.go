package cli

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/spf13/cobra"
)

// Command is a command of the strom binary that is not built on the Go client — serve, bench,
// repair-log — and parses its own flags with package flag. Registering it with Run puts it in
// `strom --help`, `strom help NAME` and shell completion, and gives it the exit codes of every
// other command: flag.ErrHelp is success, an error marked with Usage exits 2.
type Command struct {
	Name  string
	Short string
	// Run runs the command on its arguments (everything after its name, flags included).
	// It prints flag usage to stderr, which is stdout when help was asked for.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Usage marks err as a bad command line (exit 2), for Command implementations.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

const (
	groupServer = "server"
	groupData   = "data"
)

// externalCommand wraps c as a cobra command that hands its arguments over unparsed.
func (a *app) externalCommand(c Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:                c.Name + " [flags]",
		Short:              c.Short,
		GroupID:            groupServer,
		DisableFlagParsing: true,
		// The command documents its own flags; its flag set's usage is its help.
		RunE: func(cmd *cobra.Command, args []string) error {
			stderr := a.io.Err
			if wantsHelp(args) {
				stderr = a.io.Out // asked-for help is output: 'strom serve -h | less'
			}
			return c.Run(cmd.Context(), args, a.io.Out, stderr)
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveDefault
		},
	}
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		// `strom help serve` prints what `strom serve -h` prints.
		if err := c.Run(ctx, []string{"-h"}, a.io.Out, a.io.Out); err != nil && !errors.Is(err, flag.ErrHelp) {
			cmd.PrintErrln("strom:", err)
		}
	})
	return cmd
}

// wantsHelp reports whether args ask a package-flag command for its help before any
// argument that ends its flags.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}
