package fluss

import (
	"reflect"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// The writer's fast conversions must give exactly what the general conversion gives.
func TestFastDatumMatchesToDatum(t *testing.T) {
	roots := []metadata.TypeRoot{metadata.Int, metadata.BigInt, metadata.Double, metadata.Float,
		metadata.String, metadata.Char, metadata.Bytes, metadata.Binary, metadata.SmallInt}
	values := []any{int64(-7), int64(1 << 40), int32(5), float64(2.5), "abc", []byte("xyz"), int(3), float32(1.5)}
	fast := 0
	for _, root := range roots {
		typ := metadata.DataType{Root: root, Length: 3}
		for _, v := range values {
			var got row.Datum
			if !fastDatum(root, v, &got) {
				continue
			}
			fast++
			want, err := toDatum(typ, v)
			if err != nil {
				t.Errorf("%s %T: fast path accepted what toDatum rejects: %v", root, v, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %T: fast %+v, toDatum %+v", root, v, got, want)
			}
		}
	}
	if fast < 8 {
		t.Errorf("only %d fast conversions: the fast path is not taken", fast)
	}
}

// toDatums reuses the given slice and overwrites every slot, fast path or not.
func TestToDatumsReusesScratch(t *testing.T) {
	cols := []metadata.Column{
		{Name: "id", Type: metadata.DataType{Root: metadata.BigInt, NotNull: true}},
		{Name: "s", Type: metadata.DataType{Root: metadata.String}},
		{Name: "n", Type: metadata.DataType{Root: metadata.SmallInt}},
	}
	scratch := make([]row.Datum, 0, 8)
	vals, err := toDatums(cols, Row{int64(1), "a", int16(2)}, scratch)
	if err != nil {
		t.Fatal(err)
	}
	if &vals[0] != &scratch[:1][0] {
		t.Error("toDatums allocated although the scratch slice was large enough")
	}
	vals, err = toDatums(cols, Row{int64(9), nil, int16(4)}, vals)
	if err != nil {
		t.Fatal(err)
	}
	if vals[0].I != 9 || !vals[1].Null || vals[1].B != nil || vals[2].I != 4 {
		t.Errorf("second conversion left stale values: %+v", vals)
	}
	if _, err := toDatums(cols, Row{nil, "a", int16(2)}, vals); err == nil {
		t.Error("NULL for the NOT NULL key accepted")
	}
}
