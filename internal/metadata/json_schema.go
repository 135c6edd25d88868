package metadata

import (
	"fmt"
	"strings"
)

// JSON form of a column (Java ColumnJsonSerde):
//
//	{"name", "data_type", ["comment"], ["agg_function": {"type", ["parameters": {..}]}], "id"}
//
// and of a schema (Java SchemaJsonSerde):
//
//	{"version": 1, "columns": [...], ["primary_key": [...]], ["auto_increment_column": [...]],
//	 "highest_field_id": n}

// schemaJSONVersion is the only version of the schema JSON form.
const schemaJSONVersion = 1

// SchemaJSON returns the Fluss JSON form of s, as sent in GetTableSchemaResponse.schema_json.
func SchemaJSON(s Schema) []byte {
	w := jsonWriter{}
	writeSchema(&w, &s)
	return w.buf
}

// ParseSchema decodes a Fluss JSON schema and normalises it (see Schema.Normalize).
func ParseSchema(data []byte) (Schema, error) {
	obj, err := decodeJSONObject(data)
	if err != nil {
		return Schema{}, err
	}
	return decodeSchema(obj)
}

func writeSchema(w *jsonWriter, s *Schema) {
	w.beginObject()
	w.numField("version", schemaJSONVersion)
	w.key("columns")
	w.beginArray()
	for i := range s.Columns {
		w.sep()
		writeColumn(w, &s.Columns[i])
	}
	w.endArray()
	if len(s.PrimaryKey) > 0 {
		w.strList("primary_key", s.PrimaryKey)
	}
	if len(s.AutoIncrement) > 0 {
		w.strList("auto_increment_column", s.AutoIncrement)
	}
	w.numField("highest_field_id", int64(s.HighestFieldID))
	w.endObject()
}

func writeColumn(w *jsonWriter, c *Column) {
	w.beginObject()
	w.strField("name", c.Name)
	w.key("data_type")
	writeDataType(w, &c.Type)
	if c.Comment != "" {
		w.strField("comment", c.Comment)
	}
	if c.AggFunction != nil {
		w.key("agg_function")
		w.beginObject()
		w.strField("type", c.AggFunction.Type)
		if len(c.AggFunction.Parameters) > 0 {
			w.strMap("parameters", c.AggFunction.Parameters)
		}
		w.endObject()
	}
	w.numField("id", int64(c.ID))
	w.endObject()
}

func decodeSchema(obj jsonObject) (Schema, error) {
	var s Schema
	v, err := collectionField(obj, "columns")
	if err != nil {
		return Schema{}, fmt.Errorf("schema: %w", err)
	}
	var arr []any
	if v != nil {
		if arr, err = asArray("columns", v); err != nil {
			return Schema{}, fmt.Errorf("schema: %w", err)
		}
	}
	s.Columns = make([]Column, 0, len(arr))
	for i, e := range arr {
		co, ok := e.(jsonObject)
		if !ok {
			return Schema{}, fmt.Errorf("schema: column %d must be an object, got %s", i, jsonKind(e))
		}
		c, err := decodeColumn(co)
		if err != nil {
			return Schema{}, fmt.Errorf("schema: column %d: %w", i, err)
		}
		s.Columns = append(s.Columns, c)
	}
	if v, ok := field(obj, "primary_key"); ok {
		if s.PrimaryKey, err = stringList("primary_key", v); err != nil {
			return Schema{}, fmt.Errorf("schema: %w", err)
		}
		if len(s.PrimaryKey) == 0 {
			return Schema{}, fmt.Errorf("Primary key constraint must be defined for at least a single column.")
		}
	}
	if v, ok := field(obj, "auto_increment_column"); ok {
		if s.AutoIncrement, err = stringList("auto_increment_column", v); err != nil {
			return Schema{}, fmt.Errorf("schema: %w", err)
		}
	}
	hasHighest := false
	if v, ok := field(obj, "highest_field_id"); ok {
		if s.HighestFieldID, err = asInt32("highest_field_id", v); err != nil {
			return Schema{}, fmt.Errorf("schema: %w", err)
		}
		hasHighest = true
	}
	if err := s.Normalize(hasHighest); err != nil {
		return Schema{}, err
	}
	return s, nil
}

func decodeColumn(obj jsonObject) (Column, error) {
	c := Column{ID: UnknownID}
	v, err := requiredField(obj, "name")
	if err != nil {
		return Column{}, err
	}
	if c.Name, err = asString("name", v); err != nil {
		return Column{}, err
	}
	if v, err = requiredField(obj, "data_type"); err != nil {
		return Column{}, fmt.Errorf("%q: %w", c.Name, err)
	}
	to, err := asObject("data_type", v)
	if err != nil {
		return Column{}, fmt.Errorf("%q: %w", c.Name, err)
	}
	if c.Type, err = decodeDataType(to, 0); err != nil {
		return Column{}, fmt.Errorf("%q: %w", c.Name, err)
	}
	if v, ok := field(obj, "comment"); ok {
		if c.Comment, err = asString("comment", v); err != nil {
			return Column{}, fmt.Errorf("%q: %w", c.Name, err)
		}
	}
	if v, ok := field(obj, "agg_function"); ok {
		if c.AggFunction, err = decodeAggFunction(v); err != nil {
			return Column{}, fmt.Errorf("%q: %w", c.Name, err)
		}
	}
	if v, present := obj["id"]; present {
		c.ID = 0 // a JSON null reads as 0, as Java's asInt() does
		if v != nil {
			if c.ID, err = asInt32("id", v); err != nil {
				return Column{}, fmt.Errorf("%q: %w", c.Name, err)
			}
		}
	}
	return c, nil
}

// decodeAggFunction reads {"type", ["parameters"]}. As in Java, a type name that is not a known
// aggregate function yields no function at all (the column falls back to the default).
func decodeAggFunction(v any) (*AggFunction, error) {
	o, err := asObject("agg_function", v)
	if err != nil {
		return nil, err
	}
	tv, err := requiredField(o, "type")
	if err != nil {
		return nil, fmt.Errorf("agg_function: %w", err)
	}
	name, err := asString("type", tv)
	if err != nil {
		return nil, fmt.Errorf("agg_function: %w", err)
	}
	canon, ok := CanonicalAggFunction(name)
	if !ok {
		return nil, nil
	}
	af := &AggFunction{Type: canon}
	if pv, ok := field(o, "parameters"); ok {
		if af.Parameters, err = stringMap("parameters", pv); err != nil {
			return nil, fmt.Errorf("agg_function: %w", err)
		}
		if len(af.Parameters) == 0 {
			af.Parameters = nil
		}
	}
	return af, nil
}

// Aggregate function names (lower case, as written in JSON) of the aggregation merge engine.
const (
	AggSum                   = "sum"
	AggProduct               = "product"
	AggMax                   = "max"
	AggMin                   = "min"
	AggLastValue             = "last_value"
	AggLastValueIgnoreNulls  = "last_value_ignore_nulls"
	AggFirstValue            = "first_value"
	AggFirstValueIgnoreNulls = "first_value_ignore_nulls"
	AggListAgg               = "listagg"
	AggStringAgg             = "string_agg" // alias of listagg
	AggBoolAnd               = "bool_and"
	AggBoolOr                = "bool_or"
	AggRBM32                 = "rbm32"
	AggRBM64                 = "rbm64"

	// AggParamDelimiter is the only aggregate parameter: listagg/string_agg's delimiter.
	AggParamDelimiter = "delimiter"
)

var aggFunctionNames = []string{
	AggSum, AggProduct, AggMax, AggMin, AggLastValue, AggLastValueIgnoreNulls, AggFirstValue,
	AggFirstValueIgnoreNulls, AggListAgg, AggStringAgg, AggBoolAnd, AggBoolOr, AggRBM32, AggRBM64,
}

// CanonicalAggFunction normalises an aggregate function name the way Java's
// AggFunctionType.fromString does (trim, '-' → '_', case-insensitive) and returns its
// canonical lower-case form.
func CanonicalAggFunction(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(name, "-", "_")))
	for _, a := range aggFunctionNames {
		if a == n {
			return a, true
		}
	}
	return "", false
}

var (
	numericRoots = []TypeRoot{TinyInt, SmallInt, Int, BigInt, Float, Double, Decimal}
	maxMinRoots  = []TypeRoot{Char, String, TinyInt, SmallInt, Int, BigInt, Float, Double, Decimal,
		Date, Time, Timestamp, TimestampLTZ}
)

// aggSupportedRoots returns the column types an aggregate function accepts (nil = all).
func aggSupportedRoots(fn string) []TypeRoot {
	switch fn {
	case AggBoolAnd, AggBoolOr:
		return []TypeRoot{Boolean}
	case AggRBM32, AggRBM64:
		return []TypeRoot{Bytes}
	case AggListAgg, AggStringAgg:
		return []TypeRoot{String, Char}
	case AggSum, AggProduct:
		return numericRoots
	case AggMax, AggMin:
		return maxMinRoots
	}
	return nil
}

// Validate checks the function's parameters and that it accepts column type t, with Java's
// messages.
func (a *AggFunction) Validate(t DataType) error {
	for k, v := range a.Parameters {
		isListAgg := a.Type == AggListAgg || a.Type == AggStringAgg
		if !isListAgg || k != AggParamDelimiter {
			supported := "none"
			if isListAgg {
				supported = "[" + AggParamDelimiter + "]"
			}
			return fmt.Errorf("parameter '%s' is not supported for aggregation function '%s'; supported parameters: %s",
				k, a.Type, supported)
		}
		if v == "" {
			return fmt.Errorf("parameter '%s' for aggregation function '%s' must be a non-empty string", k, a.Type)
		}
	}
	roots := aggSupportedRoots(a.Type)
	if roots == nil {
		return nil
	}
	for _, r := range roots {
		if t.Root == r {
			return nil
		}
	}
	names := make([]string, len(roots))
	for i, r := range roots {
		names[i] = r.String()
	}
	return fmt.Errorf("data type for %s column must be part of %s but was '%s'",
		a.Type, listString(names), t)
}
