package cli

import (
	"slices"
	"strconv"

	"github.com/spf13/cobra"
)

func itoa[T ~int | ~int32 | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

func sortStrings(s []string) { slices.Sort(s) }

// exactArgs is cobra.ExactArgs with a message naming the missing arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s needs %s (got %d arguments)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

// group makes cmd a command group: it prints its help when called alone and refuses an
// unknown subcommand as a usage error (cobra would print the help and succeed).
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	}
	return cmd
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
