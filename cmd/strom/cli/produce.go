package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/cmd/strom/progress"
	"github.com/stromdb/strom/fluss"
)

func (a *app) produceCommand() *cobra.Command {
	var (
		file, format, null, progressMode, delimiter string
		noHeader, createPartitions                  bool
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

A progress bar with rows/s (and the ETA when the input size is known) is drawn on stderr
when stderr is a terminal.`,
		Example: `  strom produce shop.orders --file orders.csv
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
			in, size := a.io.In, a.io.InSize
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in, size = f, 0
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
				if format == "" && strings.EqualFold(filepath.Ext(file), ".csv") {
					format = "csv"
				}
			}
			if format == "" {
				format = "json"
			}
			if format != "json" && format != "csv" {
				return usagef("--format %q: want json or csv", format)
			}
			if len(delimiter) != 1 {
				return usagef("--delimiter %q: want one character", delimiter)
			}
			showBar, err := wantProgress(progressMode, a.io.ErrIsTerminal)
			if err != nil {
				return err
			}
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			table, err := conn.Table(ctx, path)
			if err != nil {
				return err
			}
			w, err := newRowWriter(table)
			if err != nil {
				return err
			}
			if createPartitions && table.Info().IsPartitioned() {
				w.createPartition = partitionCreator(ctx, conn.Admin(), table)
			}
			counter := &countingReader{r: in}
			var bar *progress.Bar
			if showBar {
				bar = progress.Start(a.io.Err, progress.Options{Label: path.String(), TotalBytes: size, Terminal: a.io.ErrIsTerminal})
				counter.bar = bar
			}
			start := time.Now()
			src := &rowSource{cols: table.Info().Schema().Columns, null: null, header: !noHeader, comma: rune(delimiter[0])}
			var n int64
			err = src.each(counter, format, func(line int, op changeOp, row fluss.Row) error {
				if err := w.write(ctx, op, row); err != nil {
					return fmt.Errorf("line %d: %w", line, err)
				}
				n++
				if bar != nil {
					bar.Rows.Add(1)
				}
				return nil
			})
			if err == nil {
				err = w.flush(ctx)
			} else {
				w.close()
			}
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return fmt.Errorf("produce to %s stopped after %d rows: %w", path, n, err)
			}
			elapsed := time.Since(start)
			if a.json {
				return printJSON(a.io.Out, map[string]any{"table": path.String(), "rows": n, "seconds": elapsed.Seconds()})
			}
			fmt.Fprintf(a.io.Err, "produced %s %s to %s in %s (%s rows/s)\n", progress.Count(n), plural(n, "row", "rows"), path,
				elapsed.Round(time.Millisecond), progress.Count(int64(float64(n)/max(elapsed.Seconds(), 1e-9))))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "-", "input file; - is stdin")
	f.StringVar(&format, "format", "", "json (JSON lines) or csv (default: csv for *.csv files, else json)")
	f.StringVar(&null, "null", "", "CSV: the cell text that means NULL")
	f.StringVar(&delimiter, "delimiter", ",", "CSV: field delimiter")
	f.BoolVar(&noHeader, "no-header", false, "CSV: there is no header line; cells are in the table's column order")
	f.BoolVar(&createPartitions, "create-partitions", false, "create the partitions rows go to when they do not exist yet")
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

// countingReader counts the bytes read, for the progress bar.
type countingReader struct {
	r   io.Reader
	bar *progress.Bar
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
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
}

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
	for line := 1; ; line++ {
		text, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(text)) > 0 {
			op, row, perr := s.jsonRow(text, idx)
			if perr != nil {
				return atLine(line, perr)
			}
			if op != opSkip {
				if err := fn(line, op, row); err != nil {
					return err
				}
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
				return fmt.Errorf("CSV header: no column %q in the table (columns: %s; pass --no-header if the file has no header)", h, columnNames(s.cols))
			}
			order = append(order, i)
		}
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return err
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

// rowWriter appends to a log table or upserts into a primary-key table, and notices failed
// writes without holding every row's result.
type rowWriter struct {
	append  *fluss.AppendWriter
	upsert  *fluss.UpsertWriter
	pending []*fluss.WriteResult
	reapAt  int // reap when pending reaches this length
	// createPartition, when set, creates the partition of row (--create-partitions).
	createPartition func(row fluss.Row) error
}

// partitionCreator returns a function that creates the partition a row belongs to.
func partitionCreator(ctx context.Context, admin *fluss.Admin, t *fluss.Table) func(fluss.Row) error {
	info := t.Info()
	schema := info.Schema()
	keys := info.PartitionKeys()
	return func(row fluss.Row) error {
		spec := make(map[string]string, len(keys))
		for _, k := range keys {
			i := schema.ColumnIndex(k)
			if row[i] == nil {
				return fmt.Errorf("partition column %s is NULL", k)
			}
			spec[k] = textOf(toJSON(schema.Columns[i].Type, row[i]))
		}
		return admin.CreatePartition(ctx, t.Path(), spec, true)
	}
}

func newRowWriter(t *fluss.Table) (*rowWriter, error) {
	if t.HasPrimaryKey() {
		u, err := t.NewUpsert().CreateWriter()
		return &rowWriter{upsert: u}, err
	}
	w, err := t.NewAppend().CreateWriter()
	return &rowWriter{append: w}, err
}

func (w *rowWriter) write(ctx context.Context, op changeOp, row fluss.Row) error {
	var res *fluss.WriteResult
	var err error
	switch {
	case w.append != nil && op == opDelete:
		return fmt.Errorf("a log table cannot delete rows")
	case w.append != nil:
		res, err = w.append.Append(ctx, row)
	case op == opDelete:
		res, err = w.upsert.Delete(ctx, row)
	default:
		res, err = w.upsert.Upsert(ctx, row)
	}
	if fluss.CodeOf(err) == fluss.ErrPartitionNotExists && w.createPartition != nil {
		if err := w.createPartition(row); err != nil {
			return fmt.Errorf("create partition: %w", err)
		}
		return w.write(ctx, op, row)
	}
	if err != nil {
		return err
	}
	w.pending = append(w.pending, res)
	if len(w.pending) >= w.reapAt {
		if err := w.reap(); err != nil {
			return fmt.Errorf("a write before this line failed: %w", err)
		}
		w.reapAt = len(w.pending) + 4096
	}
	return nil
}

// reap checks the oldest writes, in order, up to the first one still unacknowledged, and
// forgets them. Batches complete roughly in write order, so this keeps pending near the
// writes in flight at an amortised constant cost per row.
func (w *rowWriter) reap() error {
	n := 0
	for _, r := range w.pending {
		select {
		case <-r.Done():
			if err := r.Wait(context.Background()); err != nil {
				return err
			}
			n++
			continue
		default:
		}
		break
	}
	w.pending = slices.Delete(w.pending, 0, n)
	return nil
}

// flush waits for every write and returns the first failure.
func (w *rowWriter) flush(ctx context.Context) error {
	var err error
	if w.append != nil {
		err = w.append.Flush(ctx)
	} else {
		err = w.upsert.Flush(ctx)
	}
	if err == nil {
		for _, r := range w.pending {
			if err = r.Wait(ctx); err != nil {
				break
			}
		}
	}
	w.close()
	return err
}

func (w *rowWriter) close() {
	if w.append != nil {
		w.append.Close()
	} else {
		w.upsert.Close()
	}
}
