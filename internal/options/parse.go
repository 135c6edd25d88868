package options

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

func parseInt(s string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("bad integer %q", s)
	}
	return n, nil
}

func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean", s)
	}
	return b, nil
}

func parseDouble(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return f, nil
}

// ParseBytes parses a Fluss memory size such as 100mb, 1gb, 4k or 1024.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// ParseDuration parses a server option's duration: a number with a unit (as
// ParseFlussDuration accepts), or a bare number of milliseconds as Fluss's server options
// allow.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := ParseFlussDuration(t)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: %w", s, err)
	}
	return d, nil
}

// durationUnits maps Fluss's duration unit labels (TimeUtils) to Go units.
var durationUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
}

// ParseFlussDuration parses a Fluss duration option value such as "7d", "3min", "500 ms" or
// "10 s" (Java TimeUtils.parseDuration: a non-negative integer, optional spaces, a unit label,
// case-insensitive), with Java's messages. Values that do not fit in a time.Duration (about
// 292 years) are rejected.
func ParseFlussDuration(text string) (time.Duration, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, fmt.Errorf("argument is an empty- or whitespace-only string")
	}
	pos := 0
	for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' {
		pos++
	}
	number := s[:pos]
	label := strings.ToLower(strings.TrimSpace(s[pos:]))
	if number == "" {
		return 0, fmt.Errorf("text does not start with a number")
	}
	v, err := strconv.ParseInt(number, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("The value '%s' cannot be re represented as 64bit number (numeric overflow).", number)
	}
	if label == "" {
		return 0, fmt.Errorf("The time value '%s' does not specify a time unit. Time must be specified with "+
			"units milliseconds (ms), seconds (s), minutes (min), hour (h), or day (d). E.g. 50ms, 100s, 3h.", text)
	}
	unit, ok := durationUnits[label]
	if !ok {
		return 0, fmt.Errorf("Time interval unit label '%s' does not match any of the recognized units: "+
			"DAYS: (d | day | days), HOURS: (h | hour | hours), MINUTES: (min | m | minute | minutes), "+
			"SECONDS: (s | sec | secs | second | seconds), MILLISECONDS: (ms | milli | millis | millisecond | milliseconds), "+
			"MICROSECONDS: (µs | micro | micros | microsecond | microseconds), "+
			"NANOSECONDS: (ns | nano | nanos | nanosecond | nanoseconds)", label)
	}
	if v > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("The duration '%s' is too large", text)
	}
	return time.Duration(v) * unit, nil
}

// SplitList splits a comma-separated list, trimming spaces and dropping empty entries.
func SplitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
