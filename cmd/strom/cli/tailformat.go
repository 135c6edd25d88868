package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/fluss"
)

// recordFormat is a parsed `tail --format` template: literal text and verbs, in order.
type recordFormat []formatPart

// formatPart is literal text (verb 0) or one verb; for %{COLUMN}, column is its index.
type formatPart struct {
	verb   byte
	text   string
	column int
}

// parseRecordFormat parses a template (verbs in 'strom tail --help') for a table of cols.
func parseRecordFormat(s string, cols []fluss.Column) (recordFormat, error) {
	var out recordFormat
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, formatPart{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(s[i])
			}
		case c == '%':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%q ends with a lone %%", s)
			}
			i++
			switch v := s[i]; v {
			case '%':
				lit.WriteByte('%')
			case 'v', 'k', 't', 'b', 'p', 'o', 'T', 'd':
				flush()
				out = append(out, formatPart{verb: v})
			case '{':
				j := strings.IndexByte(s[i:], '}')
				if j < 0 {
					return nil, fmt.Errorf("%q: %%{ without a closing }", s)
				}
				name := s[i+1 : i+j]
				idx := -1
				for k, col := range cols {
					if col.Name == name {
						idx = k
					}
				}
				if idx < 0 {
					return nil, fmt.Errorf("%%{%s}: no such column (columns: %s)", name, columnNames(cols))
				}
				flush()
				out = append(out, formatPart{verb: '{', column: idx})
				i += j
			default:
				return nil, fmt.Errorf("unknown verb %%%c (verbs: %%v %%k %%t %%b %%p %%o %%T %%d %%{COLUMN} %%%%)", v)
			}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return out, nil
}

// keyIndexes are the indexes in cols of the primary-key columns pk.
func keyIndexes(cols []fluss.Column, pk []string) []int {
	var out []int
	for _, name := range pk {
		for i, c := range cols {
			if c.Name == name {
				out = append(out, i)
			}
		}
	}
	return out
}

// printFormatted writes one record by the template; pk are the key's column indexes.
func (a *app) printFormatted(f recordFormat, cols []fluss.Column, pk []int, partitions map[int64]string, r fluss.ScanRecord) error {
	var b strings.Builder
	for _, p := range f {
		switch p.verb {
		case 0:
			b.WriteString(p.text)
		case 'v':
			j, err := marshal(rowJSON(cols, r.Row))
			if err != nil {
				return err
			}
			b.Write(j)
		case 'k':
			key := &object{}
			for _, i := range pk {
				var v any
				if i < len(r.Row) {
					v = toJSON(cols[i].Type, r.Row[i])
				}
				key.add(cols[i].Name, v)
			}
			j, err := marshal(key)
			if err != nil {
				return err
			}
			b.Write(j)
		case 't':
			b.WriteString(r.ChangeType.ShortString())
		case 'b':
			b.WriteString(itoa(r.Bucket.Bucket))
		case 'p':
			b.WriteString(partitions[r.Bucket.PartitionID])
		case 'o':
			b.WriteString(strconv.FormatInt(r.Offset, 10))
		case 'T':
			b.WriteString(time.UnixMilli(r.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		case 'd':
			b.WriteString(strconv.FormatInt(r.Timestamp, 10))
		case '{':
			var v any
			if p.column < len(r.Row) {
				v = toJSON(cols[p.column].Type, r.Row[p.column])
			}
			b.WriteString(textOf(v))
		}
	}
	_, err := io.WriteString(a.io.Out, b.String())
	return err
}
