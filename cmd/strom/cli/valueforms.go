package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/metadata"
)

// valueForm is the command line's text and JSON form of the values of one type root (the
// table in values.go). valueForms holds one per root; which form serves which root is
// listed, with every other layer's entry of the root, in internal/typetable/table.go, from
// which valueforms_gen.go is generated.
type valueForm struct {
	// parse converts the text form of a non-NULL value of t to the Go value package fluss
	// expects for t.
	parse func(t fluss.DataType, s string) (any, error)
	// fromJSON converts a non-null value decoded by encoding/json with UseNumber; ok is false
	// when v is not a JSON kind the form accepts.
	fromJSON func(t fluss.DataType, v any) (out any, ok bool, err error)
	// toJSON converts a non-nil value read by package fluss to its JSON form; a value of
	// another Go type than the root's is returned as it is.
	toJSON func(t fluss.DataType, v any) any
	// kind names the JSON input the form accepts, for errors: "a number".
	kind string
	// textKey: map keys of the root are written as JSON object keys (else a map is written
	// as an array of {"key", "value"} objects).
	textKey bool
	// hint is the input form of a value, as 'strom produce --help', docs/operations.md and
	// the messages for bad values give it.
	hint string
}

// valueForms is indexed by TypeRoot. It is filled by init because the nested forms call
// back into parseText, fromJSON and toJSON, which read it.
var valueForms [metadata.LastTypeRoot + 1]valueForm

func init() { valueForms = valueFormTable() }

// formOf returns t's form, or nil for a root the command line does not know.
func formOf(t fluss.DataType) *valueForm {
	if int(t.Root) >= len(valueForms) || valueForms[t.Root].parse == nil {
		return nil
	}
	return &valueForms[t.Root]
}

// The entries of valueFormTable (valueforms_gen.go).

var boolText = valueForm{
	parse: func(_ fluss.DataType, s string) (any, error) { return strconv.ParseBool(strings.TrimSpace(s)) },
	fromJSON: func(t fluss.DataType, v any) (any, bool, error) {
		if b, ok := v.(bool); ok {
			return b, true, nil
		}
		return scalarFromJSON(t, v, false)
	},
	toJSON: asIs,
	kind:   "a boolean",
	hint:   "true or false",
}

// integerText parses an integer of the given bits as T, the root's Go type.
func integerText[T int8 | int16 | int32 | int64](bits int, hint string) valueForm {
	return valueForm{
		parse: func(_ fluss.DataType, s string) (any, error) {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
			return T(n), err
		},
		fromJSON: numberFromJSON,
		toJSON:   asIs,
		kind:     "a number",
		hint:     hint,
	}
}

var (
	tinyIntText  = integerText[int8](8, "a whole number from -128 to 127")
	smallIntText = integerText[int16](16, "a whole number from -32768 to 32767")
	intText      = integerText[int32](32, "a whole number from -2147483648 to 2147483647")
	bigIntText   = integerText[int64](64, "a whole number of at most 19 digits")
)

var floatText = valueForm{
	parse: func(_ fluss.DataType, s string) (any, error) {
		f, err := parseFloat(s, 32)
		return float32(f), err
	},
	fromJSON: numberFromJSON,
	toJSON: func(_ fluss.DataType, v any) any {
		if x, ok := v.(float32); ok {
			return floatJSON(float64(x), 32)
		}
		return v
	},
	kind: "a number",
	hint: "a number, NaN, Infinity or -Infinity",
}

var doubleText = valueForm{
	parse:    func(_ fluss.DataType, s string) (any, error) { return parseFloat(s, 64) },
	fromJSON: numberFromJSON,
	toJSON: func(_ fluss.DataType, v any) any {
		if x, ok := v.(float64); ok {
			return floatJSON(x, 64)
		}
		return v
	},
	kind: "a number",
	hint: "a number, NaN, Infinity or -Infinity",
}

// stringText serves CHAR and STRING: the text is the value.
var stringText = valueForm{
	parse:    func(_ fluss.DataType, s string) (any, error) { return s, nil },
	fromJSON: stringFromJSON,
	toJSON:   asIs,
	kind:     "a string",
	textKey:  true,
}

// bytesText serves BINARY and BYTES: standard base64.
var bytesText = valueForm{
	parse: func(_ fluss.DataType, s string) (any, error) {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("want base64: %w", err)
		}
		return b, nil
	},
	fromJSON: stringFromJSON,
	toJSON: func(_ fluss.DataType, v any) any {
		if x, ok := v.([]byte); ok {
			return base64.StdEncoding.EncodeToString(x)
		}
		return v
	},
	kind: "a string",
	hint: "standard base64",
}

var decimalText = valueForm{
	parse:    func(_ fluss.DataType, s string) (any, error) { return fluss.ParseDecimal(strings.TrimSpace(s)) },
	fromJSON: numberFromJSON,
	toJSON: func(_ fluss.DataType, v any) any {
		switch x := v.(type) {
		case fluss.Decimal:
			return x.String()
		case *big.Int:
			return x.String()
		}
		return v
	},
	kind: "a decimal string or number",
	hint: "a decimal number such as 12.30",
}

var dateText = valueForm{
	parse:    func(_ fluss.DataType, s string) (any, error) { return time.Parse(dateLayout, strings.TrimSpace(s)) },
	fromJSON: stringFromJSON,
	toJSON:   timeJSON(dateLayout),
	kind:     "a string",
	hint:     "YYYY-MM-DD",
}

var timeText = valueForm{
	parse:    func(_ fluss.DataType, s string) (any, error) { return parseTimeOfDay(strings.TrimSpace(s)) },
	fromJSON: stringFromJSON,
	toJSON: func(_ fluss.DataType, v any) any {
		if x, ok := v.(time.Duration); ok {
			return formatTimeOfDay(x)
		}
		return v
	},
	kind: "a string",
	hint: "HH:MM:SS or HH:MM:SS.fff",
}

var timestampText = valueForm{
	parse: func(_ fluss.DataType, s string) (any, error) {
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
	},
	fromJSON: stringFromJSON,
	toJSON:   timeJSON(tsLayout),
	kind:     "a string",
	hint:     "YYYY-MM-DDTHH:MM:SS[.fff], no zone",
}

// instantText serves TIMESTAMP_LTZ: RFC 3339 in UTC; on input also epoch milliseconds.
var instantText = valueForm{
	parse:    func(_ fluss.DataType, s string) (any, error) { return parseInstant(strings.TrimSpace(s)) },
	fromJSON: numberFromJSON,
	toJSON:   timeJSON(time.RFC3339Nano),
	kind:     "a string",
	hint:     "RFC 3339 such as 2026-01-02T15:04:05Z, or epoch milliseconds",
}

var arrayText = valueForm{
	parse: parseJSONText,
	fromJSON: func(t fluss.DataType, v any) (any, bool, error) {
		x, ok := v.([]any)
		if !ok {
			return nestedFromJSON(t, v)
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = fromJSON(*t.Elem, e); err != nil {
				return nil, true, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return out, true, nil
	},
	toJSON: func(t fluss.DataType, v any) any {
		x, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toJSON(*t.Elem, e)
		}
		return out
	},
	kind: "an array",
	hint: "a JSON array",
}

var mapText = valueForm{
	parse: parseJSONText,
	fromJSON: func(t fluss.DataType, v any) (any, bool, error) {
		switch x := v.(type) {
		case []any:
			out := make(map[any]any, len(x))
			for i, e := range x {
				pair, ok := e.(map[string]any)
				if !ok {
					return nil, true, fmt.Errorf("entry %d: want {\"key\": ..., \"value\": ...}", i)
				}
				k, err := fromJSON(*t.Key, pair["key"])
				if err != nil {
					return nil, true, fmt.Errorf("entry %d key: %w", i, err)
				}
				val, err := fromJSON(*t.Value, pair["value"])
				if err != nil {
					return nil, true, fmt.Errorf("entry %d value: %w", i, err)
				}
				out[k] = val
			}
			return out, true, nil
		case map[string]any:
			out := make(map[any]any, len(x))
			for ks, e := range x {
				k, err := parseText(*t.Key, ks)
				if err != nil {
					return nil, true, fmt.Errorf("key %q: %w", ks, err)
				}
				if out[k], err = fromJSON(*t.Value, e); err != nil {
					return nil, true, fmt.Errorf("key %q: %w", ks, err)
				}
			}
			return out, true, nil
		}
		return nestedFromJSON(t, v)
	},
	toJSON: func(t fluss.DataType, v any) any {
		if x, ok := v.(map[any]any); ok {
			return mapJSON(t, x)
		}
		return v
	},
	kind: "an object or an array of {key, value}",
	hint: "a JSON object, or an array of {\"key\": k, \"value\": v}",
}

var rowText = valueForm{
	parse: parseJSONText,
	fromJSON: func(t fluss.DataType, v any) (any, bool, error) {
		switch x := v.(type) {
		case []any:
			if len(x) != len(t.Fields) {
				return nil, true, fmt.Errorf("want %d fields, got %d", len(t.Fields), len(x))
			}
			out := make(fluss.Row, len(x))
			for i, f := range t.Fields {
				var err error
				if out[i], err = fromJSON(f.Type, x[i]); err != nil {
					return nil, true, fmt.Errorf("field %s: %w", f.Name, err)
				}
			}
			return out, true, nil
		case map[string]any:
			out := make(fluss.Row, len(t.Fields))
			for i, f := range t.Fields {
				var err error
				if out[i], err = fromJSON(f.Type, x[f.Name]); err != nil {
					return nil, true, fmt.Errorf("field %s: %w", f.Name, err)
				}
			}
			return out, true, nil
		}
		return nestedFromJSON(t, v)
	},
	toJSON: func(t fluss.DataType, v any) any {
		x, ok := v.(fluss.Row)
		if !ok {
			return v
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
	},
	kind: "an object",
	hint: "a JSON object by field name",
}

// Building blocks shared by several forms.

func asIs(_ fluss.DataType, v any) any { return v }

// scalarFromJSON reads a JSON string as the text form and, if numbers, a JSON number as its
// text.
func scalarFromJSON(t fluss.DataType, v any, numbers bool) (any, bool, error) {
	switch x := v.(type) {
	case string:
		out, err := parseText(t, x)
		return out, true, err
	case json.Number:
		if numbers {
			out, err := parseText(t, x.String())
			return out, true, err
		}
	}
	return nil, false, nil
}

func stringFromJSON(t fluss.DataType, v any) (any, bool, error) { return scalarFromJSON(t, v, false) }

func numberFromJSON(t fluss.DataType, v any) (any, bool, error) { return scalarFromJSON(t, v, true) }

// nestedFromJSON refuses a JSON value a nested form does not take.
func nestedFromJSON(t fluss.DataType, v any) (any, bool, error) {
	if _, ok := v.(string); ok {
		return nil, true, fmt.Errorf("want a JSON %s, got a string", formOf(t).kind)
	}
	return nil, false, nil
}

// parseJSONText reads the text form of a nested value: its JSON.
func parseJSONText(t fluss.DataType, s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("want JSON: %w", err)
	}
	return fromJSON(t, v)
}

// timeJSON writes a time.Time in UTC with layout.
func timeJSON(layout string) func(fluss.DataType, any) any {
	return func(_ fluss.DataType, v any) any {
		if x, ok := v.(time.Time); ok {
			return x.UTC().Format(layout)
		}
		return v
	}
}
