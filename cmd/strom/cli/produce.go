package cli

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/cmd/strom/progress"
	"github.com/stromdb/strom/fluss"
)

func (a *app) produceCommand() *cobra.Command {
	var (
		file, progressMode, delimiter string
		noHeader                      bool
		opt                           loadOptions
	)
	cmd := &cobra.Command{
		Use:   "produce DATABASE.TABLE",
		Short: "Write JSON lines or CSV rows from a file or stdin into a table",
		Long: `Write rows into a table: appends for a log table, upserts for a primary-key table.

JSON lines: one object per line, keyed by column name; missing columns are NULL. The lines
'strom tail --json' prints are accepted too ({"change_type": "-D", "row": {...}} deletes the
row's key in a primary-key table, -U lines are skipped), so a changelog can be replayed.
CSV: a header line names the columns (or --no-header: the table's column order); a cell equal
to --null (default: empty) is NULL. Values use the forms 'strom tail' prints: DECIMAL as
"12.30", DATE 2006-01-02, TIMESTAMP 2006-01-02T15:04:05.123, TIMESTAMP_LTZ RFC 3339 or epoch
milliseconds, BYTES base64, ARRAY/MAP/ROW as JSON.
Without --format, a *.csv file is CSV, a *.json/*.jsonl file JSON lines, and other input is
JSON lines when its first character is '{' and CSV otherwise.

How a load goes:
  default            streaming: rows are written as they are read, in bounded memory. A bad
                     row stops the load at its line; the rows before it are written, and the
                     message says how many, so that after fixing the line --skip resumes
                     without writing them twice.
  --dry-run          read and check every row against the table, write nothing.
  --validate-first   all or nothing for bad input: check every row first, then write them
                     all; one bad row and nothing is written. A file is read twice; stdin is
                     copied to a temporary file ($TMPDIR) on the first pass, so it needs disk
                     space for the whole input, but memory stays bounded.
  --skip N           do not read the first N rows of the input (data rows: non-empty JSON
                     lines, CSV records after the header), e.g. those a failed load reported
                     written.
A write the server refuses also stops the load; the message says how many leading rows are
known written (resume with --skip) and how many later rows were written too, which a resume
would append again to a log table (a primary-key table just upserts them again).

A progress bar with rows/s (and the ETA when the input size is known) is drawn on stderr
when stderr is a terminal.`,
		Example: `  strom produce shop.orders --file orders.csv
  strom produce shop.orders < orders.csv                  # CSV detected from the first line
  strom produce shop.orders --file orders.csv --dry-run   # check it, write nothing
  strom produce shop.events --file events.csv --validate-first
  strom produce shop.events --file events.csv --skip 99999   # resume after a failed load
  gunzip -c events.jsonl.gz | strom produce shop.events
  strom tail shop.orders --from earliest --json --idle 2s | strom produce shop.orders_copy`,
		Args:              exactArgs(1, "DATABASE.TABLE"),
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, err := tablePath(args[0])
			if err != nil {
				return err
			}
			if opt.format != "" && opt.format != "json" && opt.format != "csv" {
				return usagef("--format %q: want json or csv", opt.format)
			}
			if len(delimiter) != 1 {
				return usagef("--delimiter %q: want one character", delimiter)
			}
			if opt.skip < 0 {
				return usagef("--skip %d: want a number of rows, 0 or more", opt.skip)
			}
			if opt.dryRun && opt.validateFirst {
				return usagef("--dry-run and --validate-first exclude each other (--dry-run writes nothing)")
			}
			opt.comma, opt.header = rune(delimiter[0]), !noHeader
			in := input{r: a.io.In, size: a.io.InSize}
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = input{r: f, name: file}
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					in.size = fi.Size()
				}
				if opt.format == "" {
					opt.format = formatOfName(file)
				}
			}
			if opt.showBar, err = wantProgress(progressMode, a.io.ErrIsTerminal); err != nil {
				return err
			}
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			table, err := conn.Table(ctx, path)
			if err != nil {
				return a.didYouMean(ctx, path, err)
			}
			return a.load(ctx, conn, table, in, opt)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "-", "input file; - is stdin")
	f.StringVar(&opt.format, "format", "", "json (JSON lines) or csv (default: by the file name, else by the first character: '{' is JSON)")
	f.StringVar(&opt.null, "null", "", "CSV: the cell text that means NULL")
	f.StringVar(&delimiter, "delimiter", ",", "CSV: field delimiter")
	f.BoolVar(&noHeader, "no-header", false, "CSV: there is no header line; cells are in the table's column order")
	f.BoolVar(&opt.createPartitions, "create-partitions", false, "create the partitions rows go to when they do not exist yet")
	f.BoolVar(&opt.dryRun, "dry-run", false, "check every row against the table and write nothing")
	f.BoolVar(&opt.validateFirst, "validate-first", false, "all or nothing: check every row before the first write (default: write while reading)")
	f.Int64Var(&opt.skip, "skip", 0, "do not write the first N rows of the input (resume a failed load)")
	f.StringVar(&progressMode, "progress", "auto", "progress bar on stderr: auto (when a terminal), always, never")
	return cmd
}

func wantProgress(mode string, terminal bool) (bool, error) {
	switch mode {
	case "auto":
		return terminal, nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, usagef("--progress %q: want auto, always or never", mode)
}

// csvHeaderError is a CSV header that does not name the table's columns.
type csvHeaderError struct{ error }

func (e *csvHeaderError) Unwrap() error { return e.error }

// countingReader counts the bytes read, for the progress bar.
type countingReader struct {
	r   io.Reader
	n   int64 // bytes read so far
	bar *progress.Bar
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.bar != nil {
		c.bar.Bytes.Add(int64(n))
	}
	return n, err
}

type changeOp int

const (
	opWrite  changeOp = iota // append or upsert
	opDelete                 // delete the row's key
	opSkip                   // -U: the before-image of an update
)

// rowSource reads rows in the table's column order from JSON lines or CSV.
type rowSource struct {
	cols   []fluss.Column
	null   string
	header bool
	comma  rune
	skip   int64 // the first skip data rows are handed over as opSkip without being converted
}

// each calls fn for every data row of r, in order: every non-empty JSON line (-U lines and
// the first s.skip rows with op opSkip and no row) or CSV record after the header.
func (s *rowSource) each(r io.Reader, format string, fn func(line int, op changeOp, row fluss.Row) error) error {
	if format == "csv" {
		return s.eachCSV(r, fn)
	}
	return s.eachJSON(r, fn)
}

func (s *rowSource) columnIndex() map[string]int {
	idx := make(map[string]int, len(s.cols))
	for i, c := range s.cols {
		idx[c.Name] = i
	}
	return idx
}

func (s *rowSource) eachJSON(r io.Reader, fn func(int, changeOp, fluss.Row) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	idx := s.columnIndex()
	var n int64 // data rows so far
	for line := 1; ; line++ {
		text, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(text)) > 0 && n < s.skip {
			n++
			if err := fn(line, opSkip, nil); err != nil { // --skip: counted, not read
				return err
			}
		} else if len(bytes.TrimSpace(text)) > 0 {
			n++
			op, row, perr := s.jsonRow(text, idx)
			if perr != nil {
				return atLine(line, perr)
			}
			if err := fn(line, op, row); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *rowSource) jsonRow(text []byte, idx map[string]int) (changeOp, fluss.Row, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return 0, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	op := opWrite
	// A line printed by `strom tail --json`: unwrap its row, honour its change type.
	_, rowColumn := idx["row"]
	if inner, ok := obj["row"].(map[string]any); ok && obj["change_type"] != nil && !rowColumn {
		switch obj["change_type"] {
		case "-D":
			op = opDelete
		case "-U":
			op = opSkip
		}
		obj = inner
	}
	row := make(fluss.Row, len(s.cols))
	for k, v := range obj {
		i, ok := idx[k]
		if !ok {
			return 0, nil, fmt.Errorf("no column %q in the table (columns: %s)", k, columnNames(s.cols))
		}
		val, err := fromJSON(s.cols[i].Type, v)
		if err != nil {
			return 0, nil, jsonValue(k, s.cols[i].Type, v, err)
		}
		row[i] = val
	}
	return op, row, nil
}

func (s *rowSource) eachCSV(r io.Reader, fn func(int, changeOp, fluss.Row) error) error {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.Comma = s.comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	order := make([]int, len(s.cols)) // CSV field i goes to column order[i]
	for i := range order {
		order[i] = i
	}
	if s.header {
		hdr, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("CSV header: %w", err)
		}
		idx := s.columnIndex()
		order = order[:0]
		for _, h := range hdr {
			h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
			i, ok := idx[h]
			if !ok {
				return &csvHeaderError{fmt.Errorf("CSV header: no column %q in the table (columns: %s; pass --no-header if the file has no header)", h, columnNames(s.cols))}
			}
			order = append(order, i)
		}
	}
	var n int64 // data rows so far
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return csvSyntaxError(err)
		}
		if n++; n <= s.skip {
			if err := fn(line, opSkip, nil); err != nil { // --skip: counted, not converted
				return err
			}
			continue
		}
		if len(rec) != len(order) {
			return fmt.Errorf("line %d: %d fields, want %d", line, len(rec), len(order))
		}
		row := make(fluss.Row, len(s.cols))
		for i, cell := range rec {
			if cell == s.null {
				continue
			}
			c := s.cols[order[i]]
			v, err := parseText(c.Type, cell)
			if err != nil {
				return atLine(line, &badValue{column: c.Name, typ: c.Type, text: cell, err: err})
			}
			row[order[i]] = v
		}
		if err := fn(line, opWrite, row); err != nil {
			return err
		}
	}
}

func columnNames(cols []fluss.Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
