// Package cli implements the `strom` command line for people: databases, tables, loading
// files, tailing logs and changelogs, lookups, offsets and the cluster's shape. It is built on
// package fluss only, so it works against Apache Fluss as well as Strom. Each command group
// lives in its own file; cmd/strom dispatches to Run.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stromdb/strom/fluss"
)

// Exit codes of the strom command line.
const (
	ExitOK          = 0
	ExitFailure     = 1 // the operation failed (the message says why)
	ExitUsage       = 2 // bad command line: unknown command or flag, missing argument
	ExitNotFound    = 3 // the database, table, partition or key does not exist
	ExitUnreachable = 4 // no server answered at --bootstrap
	ExitAuth        = 5 // authentication failed
)

// Streams are the standard streams a command uses; tests pass buffers.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// InSize is the size in bytes of In when known (a regular file), else 0; produce uses it
	// for its progress bar's ETA.
	InSize int64
	// ErrIsTerminal reports whether Err is a terminal, where progress bars are drawn.
	ErrIsTerminal bool
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	s := Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode().IsRegular() {
		s.InSize = fi.Size()
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		s.ErrIsTerminal = true
	}
	return s
}

// app holds the global flags and the lazily opened connection.
type app struct {
	io        Streams
	bootstrap string
	user      string
	password  string
	json      bool
	timeout   time.Duration
	profile   string
	conn      *fluss.Connection
	// flags are the global flags; resolved is set once the connection settings were
	// resolved from them, the environment and the profile (profile.go), with from saying
	// where the bootstrap came from.
	flags    *pflag.FlagSet
	resolved bool
	from     string
}

// Run executes the command line args (without the program name) and returns the exit code.
// commands are the binary's other commands (serve, bench, repair-log), listed and dispatched
// with the rest.
func Run(ctx context.Context, args []string, streams Streams, commands ...Command) int {
	a := &app{io: streams}
	root := a.rootCommand(commands...)
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	err := root.ExecuteContext(ctx)
	if a.conn != nil {
		a.conn.Close()
	}
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK // a command's own -h (flag.ErrHelp) printed its help
	}
	where := a.bootstrap
	if a.from != "" && a.from != "--bootstrap" && a.from != "the default" {
		where += " (from " + a.from + ")"
	}
	code, msg := explain(err, where)
	fmt.Fprintln(streams.Err, "strom: "+msg)
	return code
}

func (a *app) rootCommand(commands ...Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "strom",
		Short: "Strom: streaming storage that speaks the Apache Fluss protocol",
		Long: `strom runs a Strom server and works with the data of any Fluss cluster (Strom or Apache
Fluss): databases, tables, loading files, tailing logs and changelogs, lookups, offsets.

The server commands have flags of their own ('strom help serve'). Every data command
connects to --bootstrap. Each connection setting comes from its flag, else its environment
variable ($STROM_BOOTSTRAP, $STROM_USER, $STROM_PASSWORD), else the profile (--profile or
$STROM_PROFILE, else the config's default) in the CLI config file ($STROM_CONFIG, else
~/.config/strom/config.yaml), else the default (127.0.0.1:9123):

  profile: local
  profiles:
    local: {bootstrap: 127.0.0.1:9123}
    prod:  {bootstrap: "fluss-1:9123,fluss-2:9123", user: alice, password: secret, timeout: 10s}

Output is an aligned table on a terminal and JSON with --json. Exit codes: 0 ok, 1 failed,
2 bad usage, 3 not found, 4 server unreachable, 5 authentication failed.`,
		Example: `  strom db create shop
  strom table create shop.orders -c id:BIGINT -c item:STRING -c 'price:DECIMAL(10,2)' --primary-key id --buckets 4
  strom produce shop.orders --file orders.csv
  strom tail shop.orders --from earliest
  strom lookup shop.orders id=42
  strom --profile prod table ls`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	a.flags = pf
	pf.StringVarP(&a.bootstrap, "bootstrap", "b", "", "coordinator HOST:PORT[,HOST:PORT...] (bootstrap.servers; default $STROM_BOOTSTRAP, the profile's, else "+defaultBootstrap+")")
	pf.StringVar(&a.user, "user", "", "SASL/PLAIN user (default $STROM_USER, the profile's); empty: no authentication")
	pf.StringVar(&a.password, "password", "", "SASL/PLAIN password (default $STROM_PASSWORD, the profile's)")
	pf.StringVarP(&a.profile, "profile", "P", "", "connection profile of the CLI config file (default $STROM_PROFILE, else the file's 'profile')")
	pf.BoolVar(&a.json, "json", false, "print JSON for scripts instead of aligned tables")
	pf.DurationVar(&a.timeout, "timeout", 30*time.Second, "bound on connecting and on each request (or the profile's)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })

	root.AddGroup(&cobra.Group{ID: groupServer, Title: "Server commands:"}, &cobra.Group{ID: groupData, Title: "Data commands:"})
	for _, c := range commands {
		root.AddCommand(a.externalCommand(c))
	}
	for _, c := range []*cobra.Command{a.dbCommand(), a.tableCommand(), a.produceCommand(), a.tailCommand(),
		a.lookupCommand(), a.offsetsCommand(), a.clusterCommand()} {
		c.GroupID = groupData
		root.AddCommand(c)
	}
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// connection opens the connection on first use.
// openTable parses a DATABASE.TABLE argument, connects and loads the table.
func (a *app) openTable(ctx context.Context, arg string) (*fluss.Connection, fluss.TablePath, *fluss.Table, error) {
	path, err := tablePath(arg)
	if err != nil {
		return nil, path, nil, err
	}
	conn, err := a.connection(ctx)
	if err != nil {
		return nil, path, nil, err
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		return nil, path, nil, a.didYouMean(ctx, path, err)
	}
	return conn, path, table, nil
}

func (a *app) connection(ctx context.Context) (*fluss.Connection, error) {
	if a.conn != nil {
		return a.conn, nil
	}
	if err := a.resolve(); err != nil {
		return nil, err
	}
	// Partitions are created only on request (produce --create-partitions), not by the
	// client on every write to a missing one.
	cfg := fluss.Config{BootstrapServers: a.bootstrap, RequestTimeout: a.timeout, ConnectTimeout: a.timeout, WriterDisableDynamicPartitionCreation: true}
	if a.user != "" {
		cfg.SecurityProtocol, cfg.SASLMechanism = "sasl", "PLAIN"
		cfg.SASLUsername, cfg.SASLPassword = a.user, a.password
	}
	conn, err := fluss.Connect(ctx, cfg)
	if err != nil {
		return nil, unreachableError{err}
	}
	a.conn = conn
	return conn, nil
}

// resolve settles the connection settings once: flag > environment > profile > default.
func (a *app) resolve() error {
	if a.resolved {
		return nil
	}
	a.resolved = true
	flags := a.flags
	if flags == nil {
		flags = pflag.NewFlagSet("none", pflag.ContinueOnError)
	}
	s, err := resolveSettings(flags, settings{bootstrap: a.bootstrap, user: a.user, password: a.password, timeout: a.timeout}, a.profile)
	if err != nil {
		return err
	}
	if s.warning != "" {
		fmt.Fprintln(a.io.Err, s.warning)
	}
	a.bootstrap, a.user, a.password, a.timeout, a.from = s.bootstrap, s.user, s.password, s.timeout, s.from
	return nil
}

// usageError marks a bad command line (exit 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// unreachableError marks a failure to connect.
type unreachableError struct{ error }

func (e unreachableError) Unwrap() error { return e.error }

// notFoundError marks a missing key or object found by the CLI itself (exit 3).
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }

// explain maps an error to an exit code and a message that says what to do next.
func explain(err error, bootstrap string) (int, string) {
	msg := err.Error()
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return ExitUsage, msg + " (see 'strom --help' or 'strom COMMAND --help')"
	}
	var nf notFoundError
	if errors.As(err, &nf) {
		return ExitNotFound, msg
	}
	switch fluss.CodeOf(err) {
	case fluss.ErrAuthenticate:
		return ExitAuth, msg + " (check --user and --password, or STROM_USER and STROM_PASSWORD)"
	case fluss.ErrDatabaseNotExist:
		return ExitNotFound, msg + " (list databases with 'strom db ls'; create one with 'strom db create NAME')"
	case fluss.ErrTableNotExist:
		return ExitNotFound, msg + " (list tables with 'strom table ls')"
	case fluss.ErrPartitionNotExists:
		return ExitNotFound, msg + " (create it, or pass --create-partitions to 'strom produce'; 'strom offsets TABLE' lists the partitions)"
	case fluss.ErrDatabaseAlreadyExist, fluss.ErrTableAlreadyExist:
		return ExitFailure, msg + " (pass --if-not-exists to accept an existing one)"
	case fluss.ErrDatabaseNotEmpty:
		return ExitFailure, msg + " (drop its tables first, or pass --cascade)"
	}
	var ce unreachableError
	if errors.As(err, &ce) {
		if what, ok := wrongPort(err); ok {
			return ExitUnreachable, fmt.Sprintf("%s is %s, not a Fluss RPC port (try 9123, the coordinator's default port, or the port of its bind.listeners)", bootstrap, what)
		}
		return ExitUnreachable, fmt.Sprintf("cannot reach a Fluss server at %s: %v (start one with 'strom serve', or pass --bootstrap HOST:PORT)", bootstrap, ce.error)
	}
	if errors.Is(err, context.Canceled) {
		var se stopError
		if errors.As(err, &se) {
			return ExitFailure, msg // a stopped load says what it left
		}
		return ExitFailure, "interrupted"
	}
	return ExitFailure, msg
}

// isCobraUsage recognises cobra's own argument errors, which are plain errors.
func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "flag needs an argument", "invalid argument"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// tablePath parses DATABASE.TABLE, or TABLE in database "fluss" (Fluss's default database).
func tablePath(arg string) (fluss.TablePath, error) {
	db, table, ok := strings.Cut(arg, ".")
	if !ok {
		db, table = "fluss", arg
	}
	if db == "" || table == "" {
		return fluss.TablePath{}, usagef("table %q: want DATABASE.TABLE", arg)
	}
	return fluss.NewTablePath(db, table), nil
}

// printTable writes rows under headers, aligned in columns, one line per row: line breaks
// and tabs inside a cell are escaped.
func printTable(w io.Writer, headers []string, rows [][]string) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	cells := make([]string, 0, len(headers))
	for _, r := range rows {
		cells = cells[:0]
		for _, c := range r {
			cells = append(cells, oneLine(c))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out bytes.Buffer
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// completeTables offers DATABASE.TABLE names for shell completion.
func (a *app) completeTables(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
	defer cancel()
	conn, err := a.connection(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	admin := conn.Admin()
	dbs, err := admin.ListDatabases(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, db := range dbs {
		tables, err := admin.ListTables(ctx, db)
		if err != nil {
			continue
		}
		for _, t := range tables {
			if name := db + "." + t; strings.HasPrefix(name, toComplete) {
				out = append(out, name)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func formatMillis(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
