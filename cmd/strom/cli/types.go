package cli

import (
	"fmt"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/metadata"
)

// ParseType parses a Fluss type in its SQL form (metadata.ParseSQLType), as DataType.String
// renders it and as Flink SQL writes it: INT, BIGINT NOT NULL, DECIMAL(10, 2), TIMESTAMP(3),
// TIMESTAMP_LTZ(6), CHAR(4), ARRAY<STRING>, MAP<STRING, INT>, ROW<a INT, b STRING>. Names
// are case-insensitive; INTEGER, VARCHAR (= STRING), VARBINARY (= BYTES), NUMERIC/DEC and
// TIMESTAMP WITH LOCAL TIME ZONE are accepted as aliases.
func ParseType(s string) (fluss.DataType, error) {
	t, err := metadata.ParseSQLType(s)
	if err != nil {
		return fluss.DataType{}, fmt.Errorf("type %q: %w", s, err)
	}
	return publicType(t), nil
}

// publicType converts a parsed (and validated) type to the client's form. The parser builds
// the metadata form so that it can use metadata's validation of type parameters.
func publicType(t metadata.DataType) fluss.DataType {
	out := fluss.DataType{
		Root: fluss.TypeRoot(t.Root), NotNull: t.NotNull,
		Length: t.Length, Precision: t.Precision, Scale: t.Scale,
	}
	sub := func(e *metadata.DataType) *fluss.DataType {
		if e == nil {
			return nil
		}
		p := publicType(*e)
		return &p
	}
	if t.Root == metadata.Map {
		out.Key, out.Value = sub(t.Elem), sub(t.Value)
	} else {
		out.Elem = sub(t.Elem)
	}
	for _, f := range t.Fields {
		out.Fields = append(out.Fields, fluss.Field{Name: f.Name, Type: publicType(f.Type), Description: f.Description})
	}
	return out
}
