package metadata

import (
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/typetable"
)

// tableEntry returns r's entry of internal/typetable, which lists the roots in order.
func tableEntry(t *testing.T, r TypeRoot) typetable.Root {
	t.Helper()
	e := typetable.Roots[r-1]
	if e.Name != r.String() {
		t.Fatalf("typetable entry %d is %s, want %s", r, e.Name, r)
	}
	return e
}

// Every sample type of every root reads back from its SQL text and its JSON form as the
// same type, and prints as the same SQL text.
func TestSamplesRoundTrip(t *testing.T) {
	for _, r := range TypeRoots() {
		for _, s := range tableEntry(t, r).Samples {
			typ, err := ParseSQLType(s.Type)
			if err != nil {
				t.Errorf("%s: ParseSQLType: %v", s.Type, err)
				continue
			}
			if typ.Root != r {
				t.Errorf("%s: root %s, want %s", s.Type, typ.Root, r)
			}
			if got := typ.String(); got != s.Type {
				t.Errorf("%s: String() = %s", s.Type, got)
			}
			back, err := ParseDataType(DataTypeJSON(typ))
			if err != nil {
				t.Errorf("%s: ParseDataType(%s): %v", s.Type, DataTypeJSON(typ), err)
			} else if !back.Equal(typ) {
				t.Errorf("%s: JSON %s reads back as %s", s.Type, DataTypeJSON(typ), back)
			}
		}
	}
}

// Every SQL spelling a root lists parses as that root, in any case, with and without
// NOT NULL.
func TestSQLSpellings(t *testing.T) {
	nested := map[TypeRoot]string{Array: "<INT>", Map: "<INT, INT>", Row: "<a INT>"}
	for _, r := range TypeRoots() {
		for _, sp := range r.def().sql {
			words := strings.Fields(sp)
			words[0] = strings.TrimSuffix(words[0], "(n)") + nested[r]
			text := strings.Join(words, " ")
			for _, in := range []string{text, strings.ToLower(text) + " not null"} {
				typ, err := ParseSQLType(in)
				if err != nil || typ.Root != r {
					t.Errorf("%q: %v, %v; want root %s", in, typ, err, r)
				}
			}
		}
	}
}

func TestParseSQLType(t *testing.T) {
	for in, want := range map[string]string{
		"int":                                   "INT",
		"INTEGER NOT NULL":                      "INT NOT NULL",
		"bool null":                             "BOOLEAN",
		"VARCHAR(10)":                           "STRING",
		"VARBINARY":                             "BYTES",
		"DOUBLE PRECISION":                      "DOUBLE",
		"CHAR":                                  "CHAR(1)",
		"BINARY(16)":                            "BINARY(16)",
		"NUMERIC":                               "DECIMAL(10, 0)",
		"DEC(5)":                                "DECIMAL(5, 0)",
		"DECIMAL(38,10)":                        "DECIMAL(38, 10)",
		"TIME":                                  "TIME(0)",
		"TIMESTAMP":                             "TIMESTAMP(6)",
		"TIMESTAMP(3) WITHOUT TIME ZONE":        "TIMESTAMP(3)",
		"TIMESTAMP WITH LOCAL TIME ZONE":        "TIMESTAMP_LTZ(6)",
		"timestamp(9) with local time zone":     "TIMESTAMP_LTZ(9)",
		"TIMESTAMP_LTZ(3) NOT NULL":             "TIMESTAMP_LTZ(3) NOT NULL",
		"ARRAY<STRING NOT NULL>":                "ARRAY<STRING NOT NULL>",
		"MAP<STRING, ARRAY<INT>> NOT NULL":      "MAP<STRING, ARRAY<INT>> NOT NULL",
		"ROW<a INT, `b c` TIMESTAMP(3)>":        "ROW<`a` INT, `b c` TIMESTAMP(3)>",
		"ROW<`x` ROW<y DECIMAL(20, 2)>>":        "ROW<`x` ROW<`y` DECIMAL(20, 2)>>",
		"  array < map < int , string > >     ": "ARRAY<MAP<INT, STRING>>",
	} {
		got, err := ParseSQLType(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
		} else if got.String() != want {
			t.Errorf("%q = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"":                      "expected a type name",
		"INTEGRAL":              "unknown type INTEGRAL",
		"STRING(5)":             "unexpected",
		"CHAR(1, 2)":            "CHAR takes one parameter",
		"DECIMAL(1, 2, 3)":      "DECIMAL takes (precision, scale)",
		"DECIMAL(39)":           "precision must be between 1 and 38",
		"TIMESTAMP(10)":         "precision must be between 0 and 9",
		"TIME(1, 2)":            "TIME takes one parameter",
		"CHAR(0)":               "length must be at least 1",
		"ARRAY<INT":             "expected '>'",
		"MAP<INT>":              "expected ','",
		"ROW<a INT, a STRING>":  "must be unique",
		"ROW<>":                 "expected a ROW field name",
		"INT NOT":               "unexpected",
		"DECIMAL(x)":            "bad type parameter",
		"TIMESTAMP WITH ZONE":   "unexpected",
		"TIMESTAMP_LTZ WITHOUT": "unexpected",
	} {
		if _, err := ParseSQLType(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}
