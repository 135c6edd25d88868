package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stromdb/strom/cmd/strom/cli"
	"github.com/stromdb/strom/server/logstore"
)

// repairLog is the operator's decision for a bucket whose log went offline because a stored
// batch is corrupt (docs/durability.md): with --accept-truncation it cuts the log at the
// corrupt batch, dropping it and everything after it. Run it only while the server is stopped.
func repairLog(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("repair-log", flag.ContinueOnError)
	dir := fs.String("bucket-dir", "", "the offline bucket's directory, as named in the server's ERROR line (required)")
	accept := fs.Bool("accept-truncation", false, "drop the corrupt batch and every batch after it (required: this loses acknowledged data)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: strom repair-log --bucket-dir DIR --accept-truncation

Brings a bucket that went offline because of a corrupt batch back by cutting its log at
the corrupt batch. Every batch from there on is lost, including acknowledged ones; a
primary-key bucket's state is rebuilt from what remains on the next start. Stop the
server first. See docs/durability.md.

`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if *dir == "" {
		fs.Usage()
		return cli.Usage(errors.New("repair-log: --bucket-dir is required"))
	}
	if !*accept {
		fs.Usage()
		return cli.Usage(errors.New("repair-log: refusing to drop data without --accept-truncation"))
	}
	rep, err := logstore.AcceptTruncation(*dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "cut %s at byte %d (%d bytes dropped); %d later segment(s) deleted; the log now ends at offset %d\n",
		rep.File, rep.Position, rep.RemovedBytes, len(rep.RemovedSegments), rep.LogEnd)
	for _, s := range rep.RemovedSegments {
		fmt.Fprintf(os.Stdout, "deleted %s\n", s)
	}
	return nil
}
