package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/fluss"
)

// Text and JSON forms of Fluss values, shared by produce (input), tail and lookup (output);
// each root's form is its entry of valueForms (valueforms.go):
//
//	BOOLEAN, integers, FLOAT, DOUBLE  JSON booleans and numbers (NaN, Infinity, -Infinity as strings)
//	CHAR, STRING                      strings
//	BINARY, BYTES                     standard base64 strings
//	DECIMAL                           strings with exactly the column's scale ("12.30"), so no
//	                                  digit is lost to floating point; numbers accepted on input
//	DATE                              "2006-01-02"
//	TIME                              "15:04:05.999" (fraction only when non-zero)
//	TIMESTAMP                         "2006-01-02T15:04:05.999999999" (no zone: it has none)
//	TIMESTAMP_LTZ                     RFC 3339 in UTC, "2006-01-02T15:04:05.999999999Z"; on input any
//	                                  RFC 3339 offset, or epoch milliseconds
//	ARRAY                             JSON arrays
//	MAP                               JSON objects when the key type is textual, else arrays of
//	                                  {"key": k, "value": v}
//	ROW                               JSON objects by field name
//
// In CSV, nested values are written as their JSON text.

const (
	dateLayout   = "2006-01-02"
	tsLayout     = "2006-01-02T15:04:05.999999999"
	tsLayoutText = "2006-01-02 15:04:05.999999999"
)

// parseText converts the text form of a value (a CSV cell, a key=value argument) to the Go
// value package fluss expects for t.
func parseText(t fluss.DataType, s string) (any, error) {
	f := formOf(t)
	if f == nil {
		return nil, fmt.Errorf("unsupported type %s", t)
	}
	return f.parse(t, s)
}

func parseFloat(s string, bits int) (float64, error) {
	switch strings.TrimSpace(s) {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "+Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(strings.TrimSpace(s), bits)
}

func parseTimeOfDay(s string) (time.Duration, error) {
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		if v, err := time.Parse(layout, s); err == nil {
			return time.Duration(v.Hour())*time.Hour + time.Duration(v.Minute())*time.Minute +
				time.Duration(v.Second())*time.Second + time.Duration(v.Nanosecond()), nil
		}
	}
	return 0, fmt.Errorf("want 15:04:05.999")
}

func parseInstant(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return v, nil
	}
	for _, layout := range []string{tsLayout, tsLayoutText} {
		if v, err := time.Parse(layout, s); err == nil {
			return v, nil // no offset given: UTC
		}
	}
	return time.Time{}, fmt.Errorf("want RFC 3339 (2006-01-02T15:04:05Z) or epoch milliseconds")
}

// fromJSON converts a value decoded by encoding/json with UseNumber to the Go value package
// fluss expects for t. Strings are read as the text form, so every scalar may be quoted.
func fromJSON(t fluss.DataType, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	f := formOf(t)
	if f == nil {
		if s, ok := v.(string); ok {
			return parseText(t, s)
		}
		return nil, fmt.Errorf("want a string, got %s", jsonKindOf(v))
	}
	out, ok, err := f.fromJSON(t, v)
	if !ok {
		return nil, fmt.Errorf("want %s, got %s", f.kind, jsonKindOf(v))
	}
	return out, err
}

func jsonKindOf(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// object is a JSON object that keeps its keys in insertion order (column order).
type object struct {
	keys []string
	vals []any
}

func (o *object) add(k string, v any) { o.keys = append(o.keys, k); o.vals = append(o.vals, v) }

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping, so "<" stays readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// rowJSON returns the JSON form of a row of the given columns.
func rowJSON(cols []fluss.Column, r fluss.Row) *object {
	o := &object{}
	for i, c := range cols {
		var v any
		if i < len(r) {
			v = toJSON(c.Type, r[i])
		}
		o.add(c.Name, v)
	}
	return o
}

// toJSON converts a value read by package fluss to its JSON form (see the table above).
func toJSON(t fluss.DataType, v any) any {
	f := formOf(t)
	if v == nil || f == nil {
		return v
	}
	return f.toJSON(t, v)
}

func floatJSON(f float64, bits int) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
}

func formatTimeOfDay(d time.Duration) string {
	return time.Time{}.Add(d).Format("15:04:05.999999999")
}

func mapJSON(t fluss.DataType, m map[any]any) any {
	type entry struct {
		key  string
		k, v any
	}
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		kj := toJSON(*t.Key, k)
		kb, _ := marshal(kj)
		entries = append(entries, entry{key: string(kb), k: kj, v: toJSON(*t.Value, v)})
	}
	// Deterministic output: sort by the key's JSON text.
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	if f := formOf(*t.Key); f != nil && f.textKey {
		o := &object{}
		for _, e := range entries {
			o.add(e.k.(string), e.v)
		}
		return o
	}
	out := make([]any, len(entries))
	for i, e := range entries {
		o := &object{}
		o.add("key", e.k)
		o.add("value", e.v)
		out[i] = o
	}
	return out
}

// textOf renders a value's JSON form for an aligned terminal table: strings bare, the rest
// as JSON, NULL as "NULL".
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	}
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
