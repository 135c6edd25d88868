package arrowlog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/metadata"
)

func TestArrowSchemaAllTypes(t *testing.T) {
	s, err := ArrowSchema(allCols)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ      string
		nullable bool
	}{
		{"bool", true},
		{"int8", true},
		{"int16", true},
		{"int32", false},
		{"int64", true},
		{"float32", true},
		{"float64", true},
		{"utf8", true},
		{"utf8", true},
		{"fixed_size_binary[4]", true},
		{"binary", true},
		{"decimal(10, 2)", true},
		{"decimal(38, 10)", true},
		{"date32", true},
		{"time32[s]", true},
		{"time32[ms]", true},
		{"time64[us]", true},
		{"time64[ns]", true},
		{"timestamp[s]", true},
		{"timestamp[ms]", true},
		{"timestamp[us]", true},
		{"timestamp[ns]", true},
		{"timestamp[ms, tz=UTC]", true},
		{"timestamp[ns, tz=UTC]", true},
		{"list<item: int32, nullable>", true},
		{"list<item: utf8>", true},
		{"map<utf8, int64, items_nullable>", true},
		{"struct<x: int32 nullable, y: utf8 nullable, z: list<item: float64, nullable> nullable>", true},
		{"list<item: struct<k: utf8 nullable, v: map<int32, list<item: binary, nullable>, items_nullable> nullable>, nullable>", true},
	}
	if s.NumFields() != len(want) {
		t.Fatalf("%d fields, want %d", s.NumFields(), len(want))
	}
	for i, w := range want {
		f := s.Field(i)
		if f.Name != allCols[i].Name || f.Type.String() != w.typ || f.Nullable != w.nullable {
			t.Errorf("field %d: got %s %s nullable=%v, want %s %s nullable=%v", i, f.Name, f.Type, f.Nullable, allCols[i].Name, w.typ, w.nullable)
		}
	}
	m := s.Field(26).Type.(*arrow.MapType)
	if m.KeyField().Nullable || m.ElemField().Nullable || m.ElemField().Name != "entries" {
		t.Errorf("map entries/key must be non-null and named entries: %+v %+v", m.KeyField(), m.ElemField())
	}
}

func TestArrowSchemaRejectsInvalid(t *testing.T) {
	bad := []metadata.DataType{
		{},
		{Root: metadata.Binary},
		{Root: metadata.Decimal, Precision: 39},
		{Root: metadata.Decimal, Precision: 5, Scale: 6},
		{Root: metadata.Time, Precision: 10},
		{Root: metadata.Timestamp, Precision: -1},
		{Root: metadata.Array},
		{Root: metadata.Map, Elem: &metadata.DataType{Root: metadata.Int}},
		arrayOf(metadata.DataType{Root: metadata.TimestampLTZ, Precision: 12}),
	}
	for i, b := range bad {
		if _, err := ArrowType(b); err == nil {
			t.Errorf("case %d (%+v): no error", i, b)
		}
	}
}
