package metadata

import (
	"fmt"
)

// JSON form of a data type (Java DataTypeJsonSerde):
//
//	{"type": ROOT, ["nullable": false], <parameters>}
//
// "nullable" is written only when false. Parameters: CHAR/BINARY "length"; DECIMAL
// "precision" and "scale"; TIME/TIMESTAMP/TIMESTAMP_LTZ "precision"; ARRAY "element_type";
// MAP "key_type" and "value_type"; ROW "fields": [{"name", "field_type", ["description"],
// "field_id"}]. A missing "field_id" decodes as -1 (unknown).

// maxTypeDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxTypeDepth = 64

// DataTypeJSON returns the Fluss JSON form of t.
func DataTypeJSON(t DataType) []byte {
	w := jsonWriter{}
	writeDataType(&w, &t)
	return w.buf
}

// ParseDataType decodes a Fluss JSON data type, as carried in alter-table requests.
func ParseDataType(data []byte) (DataType, error) {
	obj, err := decodeJSONObject(data)
	if err != nil {
		return DataType{}, err
	}
	t, err := decodeDataType(obj, 0)
	if err != nil {
		return DataType{}, err
	}
	return t, nil
}

func writeDataType(w *jsonWriter, t *DataType) {
	w.beginObject()
	w.strField("type", t.Root.String())
	if t.NotNull {
		w.key("nullable")
		w.boolean(false)
	}
	if t.Root.Valid() {
		t.Root.def().params.writeJSON(w, t)
	}
	w.endObject()
}

// writeTypePtr writes a nested type; a nil one (only possible in a programmatically built,
// invalid type) is written as nullable STRING rather than crashing.
func writeTypePtr(w *jsonWriter, t *DataType) {
	if t == nil {
		t = &DataType{Root: String}
	}
	writeDataType(w, t)
}

func decodeDataType(obj jsonObject, depth int) (DataType, error) {
	if depth > maxTypeDepth {
		return DataType{}, fmt.Errorf("data type nesting deeper than %d", maxTypeDepth)
	}
	v, err := requiredField(obj, "type")
	if err != nil {
		return DataType{}, err
	}
	name, err := asString("type", v)
	if err != nil {
		return DataType{}, err
	}
	root, ok := typeRootByName[name]
	if !ok {
		return DataType{}, fmt.Errorf("unknown data type %q", name)
	}
	t := DataType{Root: root}
	if v, present := obj["nullable"]; present {
		// Java reads a JSON null with asBoolean(), which is false: NOT NULL.
		b := false
		if v != nil {
			if b, err = asBool("nullable", v); err != nil {
				return DataType{}, err
			}
		}
		t.NotNull = !b
	}

	if err := root.def().params.readJSON(&typeJSON{obj: obj, name: name, depth: depth}, &t); err != nil {
		return DataType{}, err
	}
	if msg := t.checkParams(); msg != "" {
		return DataType{}, fmt.Errorf("invalid data type: %s", msg)
	}
	return t, nil
}

// typeJSON is the JSON object of a data type being decoded, for the parameters' readJSON.
type typeJSON struct {
	obj   jsonObject
	name  string // the "type" value, for errors
	depth int    // the object's nesting depth
}

// intParam reads an integer parameter; a JSON null reads as 0, as Java's asInt() does.
func (r *typeJSON) intParam(key string) (int, error) {
	v, err := collectionField(r.obj, key)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", r.name, err)
	}
	if v == nil {
		return 0, nil
	}
	n, err := asInt32(key, v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", r.name, err)
	}
	return int(n), nil
}

// nested reads a required nested data type.
func (r *typeJSON) nested(key string) (*DataType, error) {
	v, err := requiredField(r.obj, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	o, err := asObject(key, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	nt, err := decodeDataType(o, r.depth+1)
	if err != nil {
		return nil, err
	}
	return &nt, nil
}

func decodeRowFields(obj jsonObject, depth int) ([]Field, error) {
	v, err := requiredField(obj, "fields")
	if err != nil {
		return nil, fmt.Errorf("ROW: %w", err)
	}
	arr, err := asArray("fields", v)
	if err != nil {
		return nil, fmt.Errorf("ROW: %w", err)
	}
	fields := make([]Field, 0, len(arr))
	for i, e := range arr {
		fo, ok := e.(jsonObject)
		if !ok {
			return nil, fmt.Errorf("ROW field %d must be an object, got %s", i, jsonKind(e))
		}
		f := Field{ID: -1}
		v, err := requiredField(fo, "name")
		if err != nil {
			return nil, fmt.Errorf("ROW field %d: %w", i, err)
		}
		if f.Name, err = asString("name", v); err != nil {
			return nil, fmt.Errorf("ROW field %d: %w", i, err)
		}
		if v, err = requiredField(fo, "field_type"); err != nil {
			return nil, fmt.Errorf("ROW field %q: %w", f.Name, err)
		}
		to, err := asObject("field_type", v)
		if err != nil {
			return nil, fmt.Errorf("ROW field %q: %w", f.Name, err)
		}
		if f.Type, err = decodeDataType(to, depth+1); err != nil {
			return nil, err
		}
		if v, ok := field(fo, "description"); ok {
			if f.Description, err = asString("description", v); err != nil {
				return nil, fmt.Errorf("ROW field %q: %w", f.Name, err)
			}
		}
		if v, present := fo["field_id"]; present {
			f.ID = 0 // a JSON null reads as 0, as Java's asInt() does
			if v != nil {
				if f.ID, err = asInt32("field_id", v); err != nil {
					return nil, fmt.Errorf("ROW field %q: %w", f.Name, err)
				}
			}
		}
		fields = append(fields, f)
	}
	return fields, nil
}
