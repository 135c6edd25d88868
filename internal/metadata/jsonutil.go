package metadata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// This file holds the small JSON toolkit shared by the Fluss JSON forms: a tree decoder that
// never panics and reports the offending key, and an appending encoder that writes keys in
// the order Java's serializers use.

type jsonObject = map[string]any

// decodeJSONObject parses data as a single JSON object. Numbers stay json.Number so integer
// fields can be range-checked exactly.
func decodeJSONObject(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, fmt.Errorf("invalid JSON: trailing data after the top-level value")
	}
	obj, ok := v.(jsonObject)
	if !ok {
		return nil, fmt.Errorf("invalid JSON: expected an object, got %s", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case jsonObject:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// field returns m[key], treating a JSON null like an absent key.
func field(m jsonObject, key string) (any, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func requiredField(m jsonObject, key string) (any, error) {
	v, ok := field(m, key)
	if !ok {
		return nil, fmt.Errorf("missing required field %q", key)
	}
	return v, nil
}

// collectionField returns m[key] for a key Java's serdes read with node.get(key) and then
// iterate (elements(), fieldNames()) or convert (asInt()): the key must be present (Java
// fails on a missing node), and a JSON null is returned as nil for the caller to read as
// Jackson reads a NullNode — an empty collection, or 0.
func collectionField(m jsonObject, key string) (any, error) {
	v, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("missing required field %q", key)
	}
	return v, nil
}

func asObject(key string, v any) (jsonObject, error) {
	o, ok := v.(jsonObject)
	if !ok {
		return nil, fmt.Errorf("field %q must be an object, got %s", key, jsonKind(v))
	}
	return o, nil
}

func asArray(key string, v any) ([]any, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("field %q must be an array, got %s", key, jsonKind(v))
	}
	return a, nil
}

func asString(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("field %q must be a string, got %s", key, jsonKind(v))
	}
	return s, nil
}

func asBool(key string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("field %q must be a boolean, got %s", key, jsonKind(v))
	}
	return b, nil
}

// asInt32 accepts a JSON integer that fits in a Java int.
func asInt32(key string, v any) (int32, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("field %q must be a number, got %s", key, jsonKind(v))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
		return 0, fmt.Errorf("field %q must be a 32-bit integer, got %s", key, string(n))
	}
	return int32(i), nil
}

// stringList decodes an array of strings; a JSON null (v == nil) is an empty list.
func stringList(key string, v any) ([]string, error) {
	if v == nil {
		return []string{}, nil
	}
	arr, err := asArray(key, v)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("elements of %q must be strings, got %s", key, jsonKind(e))
		}
		out = append(out, s)
	}
	return out, nil
}

// stringMap decodes an object of scalar values into strings. Strings are taken as they are;
// numbers and booleans are rendered as their JSON text, as Jackson's asText does. A JSON null
// (v == nil) is an empty map.
func stringMap(key string, v any) (map[string]string, error) {
	if v == nil {
		return map[string]string{}, nil
	}
	obj, err := asObject(key, v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(obj))
	for k, e := range obj {
		switch x := e.(type) {
		case string:
			out[k] = x
		case json.Number:
			out[k] = string(x)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			return nil, fmt.Errorf("value of %q in %q must be a string, got %s", k, key, jsonKind(e))
		}
	}
	return out, nil
}

// jsonWriter appends JSON text to buf. Callers write keys in Java's order; the writer only
// manages commas.
type jsonWriter struct {
	buf   []byte
	comma bool // a value was written at the current level, so the next one needs a comma
}

func (w *jsonWriter) sep() {
	if w.comma {
		w.buf = append(w.buf, ',')
	}
	w.comma = true
}

func (w *jsonWriter) beginObject() { w.buf = append(w.buf, '{'); w.comma = false }
func (w *jsonWriter) endObject()   { w.buf = append(w.buf, '}'); w.comma = true }
func (w *jsonWriter) beginArray()  { w.buf = append(w.buf, '['); w.comma = false }
func (w *jsonWriter) endArray()    { w.buf = append(w.buf, ']'); w.comma = true }

// key writes `"k":` and leaves the writer expecting a value.
func (w *jsonWriter) key(k string) {
	w.sep()
	w.buf = appendJSONString(w.buf, k)
	w.buf = append(w.buf, ':')
	w.comma = false
}

func (w *jsonWriter) str(s string) { w.sep(); w.buf = appendJSONString(w.buf, s) }
func (w *jsonWriter) num(n int64)  { w.sep(); w.buf = strconv.AppendInt(w.buf, n, 10) }
func (w *jsonWriter) boolean(b bool) {
	w.sep()
	w.buf = strconv.AppendBool(w.buf, b)
}

func (w *jsonWriter) strField(k, v string) { w.key(k); w.str(v) }
func (w *jsonWriter) numField(k string, v int64) {
	w.key(k)
	w.num(v)
}

func (w *jsonWriter) strList(k string, list []string) {
	w.key(k)
	w.beginArray()
	for _, s := range list {
		w.str(s)
	}
	w.endArray()
}

// strMap writes an object with keys sorted, so output is deterministic.
func (w *jsonWriter) strMap(k string, m map[string]string) {
	w.key(k)
	w.beginObject()
	keys := make([]string, 0, len(m))
	for mk := range m {
		keys = append(keys, mk)
	}
	slices.Sort(keys)
	for _, mk := range keys {
		w.strField(mk, m[mk])
	}
	w.endObject()
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal. Invalid UTF-8 becomes U+FFFD, as in
// encoding/json, so the output is always valid JSON.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but break JavaScript consumers; escape them like
		// encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
