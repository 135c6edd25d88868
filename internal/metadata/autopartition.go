package metadata

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/internal/ferr"
)

// Automatic partition values are times formatted with a java.time pattern. Only patterns made
// of fixed-width year/quarter/month/day/hour fields and literals can pass Fluss's time-format
// validation, so this file implements exactly that subset of DateTimeFormatter: fields
// y/u (width 4), Q/q (1), M/L (2), d (2), H (2), quoted literals ('' is a quote) and
// non-letter literals.

// DefaultTimeFormat returns the partition time format of a time unit: yyyy, yyyyQ, yyyyMM,
// yyyyMMdd or yyyyMMddHH.
func DefaultTimeFormat(u TimeUnit) string {
	switch u {
	case TimeUnitYear:
		return "yyyy"
	case TimeUnitQuarter:
		return "yyyyQ"
	case TimeUnitMonth:
		return "yyyyMM"
	case TimeUnitHour:
		return "yyyyMMddHH"
	}
	return "yyyyMMdd"
}

type timeField uint8

const (
	fieldLiteral timeField = iota
	fieldYear
	fieldQuarter
	fieldMonth
	fieldDay
	fieldHour
)

var timeFieldNames = [...]string{"literal", "year", "quarter", "month", "day", "hour"}
var timeFieldWidths = [...]int{0, 4, 1, 2, 2, 2}

type timeToken struct {
	field   timeField
	literal string // for fieldLiteral
	era     bool   // year-of-era ('y'), which has no year 0
}

// compileTimeFormat tokenises a pattern. It fails where DateTimeFormatter.ofPattern fails
// (unterminated literal, reserved characters) and where Fluss's validation rejects a field
// (optional sections, letters other than the supported fields, wrong widths).
func compileTimeFormat(format string) ([]timeToken, error) {
	var toks []timeToken
	addLit := func(s string) {
		if n := len(toks); n > 0 && toks[n-1].field == fieldLiteral {
			toks[n-1].literal += s
			return
		}
		toks = append(toks, timeToken{field: fieldLiteral, literal: s})
	}
	for i := 0; i < len(format); {
		c := format[i]
		switch {
		case c == '\'':
			if i+1 < len(format) && format[i+1] == '\'' {
				addLit("'")
				i += 2
				continue
			}
			var lit strings.Builder
			j := i + 1
			closed := false
			for j < len(format) {
				if format[j] == '\'' {
					if j+1 < len(format) && format[j+1] == '\'' {
						lit.WriteByte('\'')
						j += 2
						continue
					}
					closed = true
					break
				}
				lit.WriteByte(format[j])
				j++
			}
			if !closed {
				return nil, fmt.Errorf("Invalid date-time format pattern '%s'.", format)
			}
			addLit(lit.String())
			i = j + 1
		case c == '[' || c == ']':
			return nil, fmt.Errorf("Time format '%s' must not contain optional sections ('[' or ']').", format)
		case c == '{' || c == '}' || c == '#':
			return nil, fmt.Errorf("Invalid date-time format pattern '%s'.", format)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(format) && format[j] == c {
				j++
			}
			var f timeField
			switch c {
			case 'y', 'u':
				f = fieldYear
			case 'Q', 'q':
				f = fieldQuarter
			case 'M', 'L':
				f = fieldMonth
			case 'd':
				f = fieldDay
			case 'H':
				f = fieldHour
			default:
				return nil, fmt.Errorf("Time format '%s' contains unsupported time field '%c'.", format, c)
			}
			if w := j - i; w != timeFieldWidths[f] {
				return nil, fmt.Errorf("Time field '%s' in format '%s' must have fixed width %d, but found %d.",
					timeFieldNames[f], format, timeFieldWidths[f], w)
			}
			toks = append(toks, timeToken{field: f, era: c == 'y'})
			i = j
		default:
			addLit(string(c))
			i++
		}
	}
	return toks, nil
}

func expectedFields(u TimeUnit) []timeField {
	switch u {
	case TimeUnitYear:
		return []timeField{fieldYear}
	case TimeUnitQuarter:
		return []timeField{fieldYear, fieldQuarter}
	case TimeUnitMonth:
		return []timeField{fieldYear, fieldMonth}
	case TimeUnitHour:
		return []timeField{fieldYear, fieldMonth, fieldDay, fieldHour}
	}
	return []timeField{fieldYear, fieldMonth, fieldDay}
}

func fieldList(fs []timeField) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = timeFieldNames[f]
	}
	return listString(names)
}

// ValidateTimeFormat checks an explicit table.auto-partition.time-format for a time unit as
// Fluss does: the pattern must consist of exactly the unit's fields in order (year; year,
// quarter; year, month; year, month, day; year, month, day, hour) with fixed widths, and a
// formatted value must be a valid partition value. loc is the table's zone.
func ValidateTimeFormat(format string, u TimeUnit, loc *time.Location) error {
	toks, err := compileTimeFormat(format)
	if err != nil {
		return err
	}
	var got []timeField
	for _, t := range toks {
		if t.field != fieldLiteral {
			got = append(got, t.field)
		}
	}
	want := expectedFields(u)
	if !slices.Equal(got, want) {
		return fmt.Errorf("Time format '%s' must contain fields %s in this order for time unit '%s', but found %s.",
			format, fieldList(want), u, fieldList(got))
	}
	if loc == nil {
		loc = time.UTC
	}
	sample := formatTokens(toks, time.Date(2024, 11, 11, 11, 0, 0, 0, loc))
	reason := DetectInvalidName(sample)
	if reason == "" {
		reason = reservedPrefixReason(sample)
	}
	if reason != "" {
		return fmt.Errorf("Time format '%s' generates invalid partition value '%s': %s.", format, sample, reason)
	}
	return nil
}

// FormatPartitionTime formats t (in its own location) with a partition time format such as
// "yyyyMMdd". Patterns outside the supported subset are reported as errors.
func FormatPartitionTime(t time.Time, format string) (string, error) {
	toks, err := compileTimeFormat(format)
	if err != nil {
		return "", err
	}
	return formatTokens(toks, t), nil
}

func formatTokens(toks []timeToken, t time.Time) string {
	b := make([]byte, 0, 16)
	for _, tok := range toks {
		switch tok.field {
		case fieldLiteral:
			b = append(b, tok.literal...)
		case fieldYear:
			y := t.Year()
			if tok.era && y <= 0 {
				y = 1 - y // year-of-era counts BC years from 1
			}
			if y > 9999 {
				b = append(b, '+') // java.time's EXCEEDS_PAD sign
			}
			b = appendPadded(b, y, 4)
		case fieldQuarter:
			b = append(b, byte('1'+(int(t.Month())-1)/3))
		case fieldMonth:
			b = appendPadded(b, int(t.Month()), 2)
		case fieldDay:
			b = appendPadded(b, t.Day(), 2)
		case fieldHour:
			b = appendPadded(b, t.Hour(), 2)
		}
	}
	return string(b)
}

func appendPadded(b []byte, v, width int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// AutoPartitionTime returns the partition value for the unit offset units away from now
// (negative: in the past), with now taken in loc: Java's generateAutoPartitionTime. Years,
// quarters and months move the calendar date and clamp the day to the month's end (Jan 31 +
// 1 month = Feb 28/29); days move the local date; hours move the instant.
func AutoPartitionTime(now time.Time, offset int, u TimeUnit, format string, loc *time.Location) (string, error) {
	if loc == nil {
		loc = time.UTC
	}
	if format == "" {
		format = DefaultTimeFormat(u)
	}
	t := now.In(loc)
	switch u {
	case TimeUnitYear:
		t = addMonthsClamped(t, 12*offset)
	case TimeUnitQuarter:
		t = addMonthsClamped(t, 3*offset)
	case TimeUnitMonth:
		t = addMonthsClamped(t, offset)
	case TimeUnitHour:
		t = t.Add(time.Duration(offset) * time.Hour)
	default:
		t = t.AddDate(0, 0, offset)
	}
	return FormatPartitionTime(t, format)
}

func addMonthsClamped(t time.Time, months int) time.Time {
	y, m, d := t.Date()
	total := y*12 + int(m) - 1 + months
	ny, nm := total/12, time.Month(total%12+1)
	if total%12 < 0 {
		ny, nm = (total-11)/12, time.Month((total%12+12)%12+1)
	}
	if dim := daysIn(ny, nm); d > dim {
		d = dim
	}
	return time.Date(ny, nm, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// ValidPartitionTime reports whether value parses with the partition time format (exact
// widths and literals, month 1–12, day 1–31, hour 0–23, quarter 1–4, year-of-era ≥ 1;
// a day past the month's end is accepted, as java.time's SMART resolver clamps it).
func ValidPartitionTime(value, format string) bool {
	toks, err := compileTimeFormat(format)
	if err != nil {
		return false
	}
	rest := value
	for _, tok := range toks {
		if tok.field == fieldLiteral {
			if !strings.HasPrefix(rest, tok.literal) {
				return false
			}
			rest = rest[len(tok.literal):]
			continue
		}
		w := timeFieldWidths[tok.field]
		if len(rest) < w {
			return false
		}
		n := 0
		for i := 0; i < w; i++ {
			c := rest[i]
			if c < '0' || c > '9' {
				return false
			}
			n = n*10 + int(c-'0')
		}
		rest = rest[w:]
		lo, hi := 0, 9999
		switch tok.field {
		case fieldYear:
			if tok.era {
				lo = 1
			}
		case fieldQuarter:
			lo, hi = 1, 4
		case fieldMonth:
			lo, hi = 1, 12
		case fieldDay:
			lo, hi = 1, 31
		case fieldHour:
			hi = 23
		}
		if n < lo || n > hi {
			return false
		}
	}
	return rest == ""
}

// CheckPartitionTime applies CREATE_PARTITION's auto-partition checks to the value of the
// time key (partitionKeys/values in key order): when auto-partitioning is enabled or a time
// format is set, the value must match the format; when enabled, it must not be older than the
// retention window (num-retention units before now; negative retention keeps everything, as
// Java's string comparison of the generated bound does not apply then). Violations are
// *ferr.Error with code PARTITION_SPEC_INVALID_EXCEPTION (43).
func (a AutoPartition) CheckPartitionTime(partitionKeys, values []string, now time.Time) error {
	if !a.Enabled && a.TimeFormat == "" {
		return nil
	}
	key := a.Key
	if key == "" && len(partitionKeys) > 0 {
		key = partitionKeys[0]
	}
	value, found := "", false
	for i, k := range partitionKeys {
		if k == key && i < len(values) {
			value, found = values[i], true
		}
	}
	format := a.Format()
	if !found || !ValidPartitionTime(value, format) {
		shown := value
		if !found {
			shown = "null"
		}
		return ferr.New(ferr.PartitionSpecInvalidException,
			"Partition value '%s' does not match the expected format '%s' for auto-partition time unit '%s'.",
			shown, format, a.TimeUnit)
	}
	if !a.Enabled || a.NumRetention < 0 {
		return nil
	}
	bound, err := AutoPartitionTime(now, -a.NumRetention, a.TimeUnit, a.TimeFormat, a.Location)
	if err != nil {
		return ferr.New(ferr.PartitionSpecInvalidException, "%s", err.Error())
	}
	if bound > value {
		return ferr.New(ferr.PartitionSpecInvalidException,
			"Partition value '%s' is out-of-date. The earliest retained partition is '%s'.", value, bound)
	}
	return nil
}
