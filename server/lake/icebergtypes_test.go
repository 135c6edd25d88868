package lake

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/typetable"
)

// Every root has an Iceberg mapping, and every sample type of the type table maps to the
// Iceberg type FlussDataTypeToIcebergDataType gives it, with nested ids taken in order.
func TestSamplesRoundTrip(t *testing.T) {
	want := map[string]string{
		"BOOLEAN":                         "boolean",
		"TINYINT NOT NULL":                "int",
		"SMALLINT":                        "int",
		"INT":                             "int",
		"BIGINT":                          "long",
		"FLOAT":                           "float",
		"DOUBLE":                          "double",
		"CHAR(3)":                         "string",
		"STRING":                          "string",
		"BINARY(4)":                       "binary",
		"BYTES":                           "binary",
		"DECIMAL(10, 2)":                  "decimal(10, 2)",
		"DECIMAL(38, 10)":                 "decimal(38, 10)",
		"DATE":                            "date",
		"TIME(0)":                         "time",
		"TIME(3)":                         "time",
		"TIMESTAMP(3)":                    "timestamp",
		"TIMESTAMP(9)":                    "timestamp",
		"TIMESTAMP_LTZ(3)":                "timestamptz",
		"TIMESTAMP_LTZ(6)":                "timestamptz",
		"ARRAY<INT>":                      "list<int>",
		"MAP<STRING NOT NULL, BIGINT>":    "map<string, long>",
		"MAP<INT NOT NULL, STRING>":       "map<int, string>",
		"ROW<`x` INT, `y` ARRAY<STRING>>": "struct<10: x: optional int, 12: y: optional list<string>>",
	}
	for _, r := range metadata.TypeRoots() {
		if icebergTypes[r] == nil {
			t.Errorf("%s has no Iceberg mapping", r)
			continue
		}
		for _, s := range typetable.Roots[r-1].Samples {
			typ, err := metadata.ParseSQLType(s.Type)
			if err != nil {
				t.Fatalf("%s: %v", s.Type, err)
			}
			next := 10
			it, err := icebergType(typ, &next)
			if err != nil {
				t.Errorf("%s: %v", s.Type, err)
				continue
			}
			w, ok := want[s.Type]
			if !ok {
				t.Errorf("%s maps to %s: add it to this test's expectations", s.Type, it)
			} else if it.String() != w {
				t.Errorf("%s maps to %s, want %s", s.Type, it, w)
			}
		}
	}
}
