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
