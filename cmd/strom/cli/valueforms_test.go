package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/typetable"
)

// Every root has a complete value form, and every sample value of the type table reads from
// its text form and prints back as the same text; its JSON form (as tail writes it) reads
// back, through the JSON input of produce, as the same Go value.
func TestSamplesRoundTrip(t *testing.T) {
	for _, r := range metadata.TypeRoots() {
		f := &valueForms[r]
		if f.parse == nil || f.fromJSON == nil || f.toJSON == nil || f.kind == "" {
			t.Errorf("%s: incomplete value form %+v", r, f)
			continue
		}
		for _, s := range typetable.Roots[r-1].Samples {
			typ, err := ParseType(s.Type)
			if err != nil {
				t.Fatalf("%s: %v", s.Type, err)
			}
			v, err := parseText(typ, s.Value)
			if err != nil {
				t.Errorf("%s: parseText(%q): %v", s.Type, s.Value, err)
				continue
			}
			if got := textOf(toJSON(typ, v)); got != s.Value {
				t.Errorf("%s: %q prints as %q", s.Type, s.Value, got)
			}
			j, err := marshal(toJSON(typ, v))
			if err != nil {
				t.Fatalf("%s: %v", s.Type, err)
			}
			d := json.NewDecoder(strings.NewReader(string(j)))
			d.UseNumber()
			var decoded any
			if err := d.Decode(&decoded); err != nil {
				t.Fatalf("%s: %s: %v", s.Type, j, err)
			}
			back, err := fromJSON(typ, decoded)
			if err != nil {
				t.Errorf("%s: fromJSON(%s): %v", s.Type, j, err)
			} else if !reflect.DeepEqual(back, v) {
				t.Errorf("%s: JSON %s reads back as %#v, want %#v", s.Type, j, back, v)
			}
		}
	}
}

// A JSON value of the wrong kind is refused with the kind the column wants.
func TestFromJSONWrongKind(t *testing.T) {
	for typ, in := range map[string]struct {
		v    any
		want string
	}{
		"BOOLEAN":          {json.Number("1"), "want a boolean, got a number"},
		"INT":              {true, "want a number, got a boolean"},
		"DECIMAL(10, 2)":   {[]any{}, "want a decimal string or number, got an array"},
		"DATE":             {json.Number("1"), "want a string, got a number"},
		"ARRAY<INT>":       {"[1]", "want a JSON an array, got a string"},
		"ARRAY<INT> ":      {map[string]any{}, "want an array, got an object"},
		"MAP<INT, INT>":    {true, "want an object or an array of {key, value}, got a boolean"},
		"ROW<a INT>":       {json.Number("1"), "want an object, got a number"},
		"TIMESTAMP_LTZ(3)": {true, "want a string, got a boolean"},
	} {
		pt, err := ParseType(typ)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fromJSON(pt, in.v); err == nil || err.Error() != in.want {
			t.Errorf("%s %#v: err = %v, want %q", typ, in.v, err, in.want)
		}
	}
}
