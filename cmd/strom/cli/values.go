package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/fluss"
)

// Text and JSON forms of Fluss values, shared by produce (input), tail and lookup (output):
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
	switch t.Root {
	case fluss.TypeBoolean:
		return strconv.ParseBool(strings.TrimSpace(s))
	case fluss.TypeTinyInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 8)
		return int8(n), err
	case fluss.TypeSmallInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 16)
		return int16(n), err
	case fluss.TypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		return int32(n), err
	case fluss.TypeBigInt:
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case fluss.TypeFloat:
		f, err := parseFloat(s, 32)
		return float32(f), err
	case fluss.TypeDouble:
		return parseFloat(s, 64)
	case fluss.TypeChar, fluss.TypeString:
		return s, nil
	case fluss.TypeBinary, fluss.TypeBytes:
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("want base64: %w", err)
		}
		return b, nil
	case fluss.TypeDecimal:
		return fluss.ParseDecimal(strings.TrimSpace(s))
	case fluss.TypeDate:
		return time.Parse(dateLayout, strings.TrimSpace(s))
	case fluss.TypeTime:
		return parseTimeOfDay(strings.TrimSpace(s))
	case fluss.TypeTimestamp:
		s = strings.TrimSpace(s)
		for _, layout := range []string{tsLayout, tsLayoutText} {
			if v, err := time.Parse(layout, s); err == nil {
				return v, nil
			}
		}
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("want 2006-01-02T15:04:05.999999999")
		}
		return v.UTC(), nil
	case fluss.TypeTimestampLTZ:
		return parseInstant(strings.TrimSpace(s))
	case fluss.TypeArray, fluss.TypeMap, fluss.TypeRow:
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("want JSON: %w", err)
		}
		return fromJSON(t, v)
	}
	return nil, fmt.Errorf("unsupported type %s", t)
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
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		if t.Root == fluss.TypeArray || t.Root == fluss.TypeMap || t.Root == fluss.TypeRow {
			return nil, fmt.Errorf("want a JSON %s, got a string", jsonKind(t))
		}
		return parseText(t, x)
	case json.Number:
		switch t.Root {
		case fluss.TypeTinyInt, fluss.TypeSmallInt, fluss.TypeInt, fluss.TypeBigInt, fluss.TypeFloat, fluss.TypeDouble,
			fluss.TypeDecimal, fluss.TypeTimestampLTZ:
			return parseText(t, x.String())
		}
	case bool:
		if t.Root == fluss.TypeBoolean {
			return x, nil
		}
	case []any:
		switch t.Root {
		case fluss.TypeArray:
			out := make([]any, len(x))
			for i, e := range x {
				var err error
				if out[i], err = fromJSON(*t.Elem, e); err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
			}
			return out, nil
		case fluss.TypeMap:
			out := make(map[any]any, len(x))
			for i, e := range x {
				pair, ok := e.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("entry %d: want {\"key\": ..., \"value\": ...}", i)
				}
				k, err := fromJSON(*t.Key, pair["key"])
				if err != nil {
					return nil, fmt.Errorf("entry %d key: %w", i, err)
				}
				val, err := fromJSON(*t.Value, pair["value"])
				if err != nil {
					return nil, fmt.Errorf("entry %d value: %w", i, err)
				}
				out[k] = val
			}
			return out, nil
		case fluss.TypeRow:
			if len(x) != len(t.Fields) {
				return nil, fmt.Errorf("want %d fields, got %d", len(t.Fields), len(x))
			}
			out := make(fluss.Row, len(x))
			for i, f := range t.Fields {
				var err error
				if out[i], err = fromJSON(f.Type, x[i]); err != nil {
					return nil, fmt.Errorf("field %s: %w", f.Name, err)
				}
			}
			return out, nil
		}
	case map[string]any:
		switch t.Root {
		case fluss.TypeMap:
			out := make(map[any]any, len(x))
			for ks, e := range x {
				k, err := parseText(*t.Key, ks)
				if err != nil {
					return nil, fmt.Errorf("key %q: %w", ks, err)
				}
				if out[k], err = fromJSON(*t.Value, e); err != nil {
					return nil, fmt.Errorf("key %q: %w", ks, err)
				}
			}
			return out, nil
		case fluss.TypeRow:
			out := make(fluss.Row, len(t.Fields))
			for i, f := range t.Fields {
				var err error
				if out[i], err = fromJSON(f.Type, x[f.Name]); err != nil {
					return nil, fmt.Errorf("field %s: %w", f.Name, err)
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("want %s, got %s", jsonKind(t), jsonKindOf(v))
}

func jsonKind(t fluss.DataType) string {
	switch t.Root {
	case fluss.TypeBoolean:
		return "a boolean"
	case fluss.TypeTinyInt, fluss.TypeSmallInt, fluss.TypeInt, fluss.TypeBigInt, fluss.TypeFloat, fluss.TypeDouble:
		return "a number"
	case fluss.TypeDecimal:
		return "a decimal string or number"
	case fluss.TypeArray:
		return "an array"
	case fluss.TypeMap:
		return "an object or an array of {key, value}"
	case fluss.TypeRow:
		return "an object"
	}
	return "a string"
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
	if v == nil {
		return nil
	}
	switch x := v.(type) {
	case float32:
		return floatJSON(float64(x), 32)
	case float64:
		return floatJSON(x, 64)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case fluss.Decimal:
		return x.String()
	case *big.Int:
		return x.String()
	case time.Duration:
		return formatTimeOfDay(x)
	case time.Time:
		switch t.Root {
		case fluss.TypeDate:
			return x.UTC().Format(dateLayout)
		case fluss.TypeTimestamp:
			return x.UTC().Format(tsLayout)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		if t.Root != fluss.TypeArray {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toJSON(*t.Elem, e)
		}
		return out
	case map[any]any:
		if t.Root != fluss.TypeMap {
			break
		}
		return mapJSON(t, x)
	case fluss.Row:
		if t.Root != fluss.TypeRow {
			break
		}
		o := &object{}
		for i, f := range t.Fields {
			var e any
			if i < len(x) {
				e = toJSON(f.Type, x[i])
			}
			o.add(f.Name, e)
		}
		return o
	}
	return v
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
	if t.Key.Root == fluss.TypeString || t.Key.Root == fluss.TypeChar {
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
