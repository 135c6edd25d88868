package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stromdb/strom/cmd/strom/progress"
	"github.com/stromdb/strom/fluss"
)

// How `strom produce` loads its input: streaming (the default), --dry-run, --validate-first,
// and --skip to resume. See the command's help and docs/operations.md, "Loading large files".

// loadOptions are the flags of produce that shape a load.
type loadOptions struct {
	format           string // json or csv; "" until known
	null             string
	comma            rune
	header           bool
	createPartitions bool
	dryRun           bool  // check every row, write nothing
	validateFirst    bool  // check every row, then write (all or nothing for bad input)
	skip             int64 // do not write input rows 0..skip-1
	showBar          bool
}

// input is what produce reads: a file or stdin.
type input struct {
	r    io.Reader
	name string // file name, "" for stdin
	size int64  // bytes when a regular file, else 0
}

// formatOfName is the format a file name implies, "" when it implies none.
func formatOfName(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv", ".tsv":
		return "csv"
	case ".json", ".jsonl", ".ndjson":
		return "json"
	}
	return ""
}

// sniffFormat decides JSON lines or CSV from the first character that is not white space
// (or a byte-order mark): '{' begins a JSON object, anything else a CSV header or record.
// It only peeks, so br still yields the whole input.
func sniffFormat(br *bufio.Reader) string {
	for i := 0; i < 64<<10; i++ {
		b, _ := br.Peek(i + 1)
		if len(b) <= i {
			return "json" // empty or blank: either reads no rows
		}
		switch c := b[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case c == 0xEF && i == 0:
			if bom, _ := br.Peek(3); string(bom) == "\ufeff" {
				i += 2
				continue
			}
			return "csv"
		case c == '{':
			return "json"
		default:
			return "csv"
		}
	}
	return "csv"
}

// load runs one `strom produce`: it checks, writes, or both, as opt says.
func (a *app) load(ctx context.Context, conn *fluss.Connection, table *fluss.Table, in input, opt loadOptions) error {
	path := table.Path()
	seeker, seekable := in.r.(io.Seeker)
	seekable = seekable && in.size > 0 // a regular file, not a terminal or pipe
	var startPos int64
	if seekable && opt.validateFirst {
		// Where the input starts: stdin may be a file some bytes of which were read already.
		var err error
		if startPos, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			seekable = false
		}
	}
	counter := &countingReader{r: in.r}
	br := bufio.NewReaderSize(counter, 1<<20)
	sniffed := opt.format == ""
	if sniffed {
		opt.format = sniffFormat(br)
	}
	src := &rowSource{cols: table.Info().Schema().Columns, null: opt.null, header: opt.header, comma: opt.comma, skip: opt.skip}
	hint := func(err error) error {
		var he *csvHeaderError
		if sniffed && opt.format == "csv" && errors.As(err, &he) {
			return fmt.Errorf("%w (the input was read as CSV because it does not start with '{'; pass --format json or --format csv)", err)
		}
		return err
	}
	start := time.Now()

	if opt.dryRun || opt.validateFirst {
		var r io.Reader = br
		var spool *os.File
		if opt.validateFirst && !seekable {
			// A pipe cannot be read twice: keep a copy on disk, never in memory.
			f, err := os.CreateTemp("", "strom-produce-*")
			if err != nil {
				return fmt.Errorf("--validate-first needs a temporary copy of stdin: %w", err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			spool, r = f, io.TeeReader(br, f)
		}
		bar := a.startBar(opt, "check "+path.String(), in.size, counter)
		rows, err := checkRows(table, src, r, opt.format, bar)
		bar.finish()
		if err != nil {
			return fmt.Errorf("check of %s stopped: %w; nothing was written", path, hint(err))
		}
		if opt.dryRun {
			if a.json {
				return printJSON(a.io.Out, map[string]any{"table": path.String(), "rows": rows, "written": 0, "dry_run": true})
			}
			fmt.Fprintf(a.io.Err, "checked %s %s for %s: all valid; nothing written (--dry-run)\n", progress.Count(rows), plural(rows, "row", "rows"), path)
			return nil
		}
		// Second pass: the same bytes again, from the start.
		if spool != nil {
			if _, err := spool.Seek(0, io.SeekStart); err != nil {
				return err
			}
			counter = &countingReader{r: spool}
		} else {
			if _, err := seeker.Seek(startPos, io.SeekStart); err != nil {
				return err
			}
			counter = &countingReader{r: in.r}
		}
		br = bufio.NewReaderSize(counter, 1<<20)
	}

	w, err := newRowWriter(table)
	if err != nil {
		return err
	}
	defer w.close()
	if opt.createPartitions && table.Info().IsPartitioned() {
		w.createPartition = partitionCreator(ctx, conn.Admin(), table)
	}
	bar := a.startBar(opt, path.String(), in.size, counter)
	var rows, n int64 // input rows read, rows written
	err = src.each(br, opt.format, func(line int, op changeOp, row fluss.Row) error {
		idx := rows
		rows++
		if idx < opt.skip || op == opSkip {
			return nil
		}
		if err := w.write(ctx, idx, line, op, row); err != nil {
			return err
		}
		n++
		bar.addRow()
		return nil
	})
	if err == nil {
		err = w.flush(ctx)
	}
	bar.finish()
	if err != nil {
		return a.stopped(ctx, table, w, rows, opt, hint(err))
	}
	elapsed := time.Since(start)
	if a.json {
		return printJSON(a.io.Out, map[string]any{"table": path.String(), "rows": n, "skipped": min(opt.skip, rows), "seconds": elapsed.Seconds()})
	}
	skipped := ""
	if opt.skip > 0 {
		skipped = fmt.Sprintf(" (skipped the first %s)", progress.Count(min(opt.skip, rows)))
	}
	fmt.Fprintf(a.io.Err, "produced %s %s to %s in %s (%s rows/s)%s\n", progress.Count(n), plural(n, "row", "rows"), path,
		elapsed.Round(time.Millisecond), progress.Count(int64(float64(n)/max(elapsed.Seconds(), 1e-9))), skipped)
	return nil
}

// stopped explains a load that stopped on err after reading rows input rows: which leading
// rows are in the table, how to resume, and what a resume would write twice.
func (a *app) stopped(ctx context.Context, table *fluss.Table, w *rowWriter, rows int64, opt loadOptions, err error) error {
	stop := rows // an input error: the bad row was not counted
	var we *writeError
	if errors.As(err, &we) {
		stop = we.row
	}
	settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.timeout)
	defer cancel()
	left := w.settle(settleCtx, stop)
	if left.failed != nil && left.failed.row < stop {
		err = left.failed // an earlier write failed: that is where the table's rows end
	}
	path := table.Path()
	var b strings.Builder
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(&b, "produce to %s interrupted. ", path)
	} else {
		fmt.Fprintf(&b, "produce to %s stopped: %v. ", path, err)
	}
	switch {
	case left.prefix <= opt.skip && left.later == 0:
		b.WriteString("Nothing was written")
		if opt.skip > 0 {
			fmt.Fprintf(&b, " after the %s rows skipped", progress.Count(opt.skip))
		}
	default:
		if left.prefix == 1 {
			b.WriteString("The first row of the input is written")
		} else {
			fmt.Fprintf(&b, "The first %s rows of the input are written", progress.Count(left.prefix))
		}
		fmt.Fprintf(&b, "; once the cause is fixed, resume with --skip %d", left.prefix)
	}
	if left.later > 0 {
		if table.HasPrimaryKey() {
			fmt.Fprintf(&b, " (%s later %s were written too; upserting them again is harmless)", progress.Count(left.later), plural(left.later, "row", "rows"))
		} else {
			fmt.Fprintf(&b, " (%s later %s were written too, and a resume appends them again)", progress.Count(left.later), plural(left.later, "row", "rows"))
		}
	}
	if we == nil && !opt.validateFirst && left.prefix > opt.skip {
		b.WriteString("; --dry-run or --validate-first check a whole input before writing")
	}
	return stopError{msg: b.String(), err: err}
}

// stopError is a stopped load's message; it wraps the cause so that its Fluss error code
// still picks the exit code.
type stopError struct {
	msg string
	err error
}

func (e stopError) Error() string { return e.msg }
func (e stopError) Unwrap() error { return e.err }

// plainClientError is an error of package fluss without its "fluss: " prefix, for people.
type plainClientError struct{ error }

func (e plainClientError) Error() string { return strings.TrimPrefix(e.error.Error(), "fluss: ") }
func (e plainClientError) Unwrap() error { return e.error }

// checkRows reads every row of r and checks it against the table as a write would (the
// client's conversion, fluss.Table.CheckRow), without writing. It returns the number of
// input rows.
func checkRows(table *fluss.Table, src *rowSource, r io.Reader, format string, bar loadBar) (int64, error) {
	info := table.Info()
	cols := info.Schema().Columns
	pk := map[string]bool{}
	for _, k := range info.PrimaryKeys() {
		pk[k] = true
	}
	var rows int64
	err := src.each(r, format, func(line int, op changeOp, row fluss.Row) error {
		rows++
		bar.addRow()
		switch {
		case op == opSkip:
			return nil
		case op == opDelete && !info.HasPrimaryKey():
			return atLine(line, errors.New("a log table cannot delete rows"))
		}
		for i, c := range cols {
			if row[i] != nil || (op == opDelete && !pk[c.Name]) {
				continue
			}
			if pk[c.Name] || c.Type.NotNull {
				return atLine(line, fmt.Errorf("column %q is NOT NULL but has no value", c.Name))
			}
		}
		if op == opWrite {
			// The rest of what the writer refuses: DECIMAL precision and scale, lengths.
			if err := table.CheckRow(row); err != nil {
				return atLine(line, plainClientError{err})
			}
		}
		return nil
	})
	return rows, err
}

// loadBar is a progress bar that may be off.
type loadBar struct{ b *progress.Bar }

func (a *app) startBar(opt loadOptions, label string, size int64, counter *countingReader) loadBar {
	if !opt.showBar {
		return loadBar{}
	}
	b := progress.Start(a.io.Err, progress.Options{Label: label, TotalBytes: size, Terminal: a.io.ErrIsTerminal})
	b.Bytes.Add(counter.n) // what was read before the bar started (the format sniffing)
	counter.bar = b
	return loadBar{b}
}

func (l loadBar) addRow() {
	if l.b != nil {
		l.b.Rows.Add(1)
	}
}

func (l loadBar) finish() {
	if l.b != nil {
		l.b.Finish()
	}
}
