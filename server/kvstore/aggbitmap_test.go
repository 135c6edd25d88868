package kvstore

import (
	"encoding/hex"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

func bitmap32(t testing.TB, vals ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(vals...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rangeOf(from, to uint32) []uint32 {
	var out []uint32
	for v := from; v < to; v++ {
		out = append(out, v)
	}
	return out
}

// The union's bytes are the portable format of github.com/RoaringBitmap/RoaringFormatSpec,
// written out by hand here: an array container stays one (4 values), 200 consecutive values
// become one run container (run-optimized, as Java serializes them).
func TestRbm32UnionBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b []uint32
		want string
	}{
		{"array", []uint32{1, 2, 3}, []uint32{5, 2},
			"3a300000" + "01000000" + "0000" + "0300" + "10000000" + "0100020003000500"},
		{"run", rangeOf(0, 100), rangeOf(100, 200),
			"3b300000" + "01" + "0000" + "c700" + "0100" + "0000c700"},
	} {
		got, err := rbm32(row.Datum{B: bitmap32(t, c.a...)}, row.Datum{B: bitmap32(t, c.b...)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h := hex.EncodeToString(got.B); h != c.want {
			t.Fatalf("%s: % x\nwant %s", c.name, got.B, c.want)
		}
	}
}

func TestRbm32NullsAndCorruptBytes(t *testing.T) {
	bm := row.Datum{B: bitmap32(t, 7)}
	for _, c := range [][2]row.Datum{{row.NullDatum, bm}, {bm, row.NullDatum}} {
		got, err := rbm32(c[0], c[1])
		if err != nil || got.Null || string(got.B) != string(bm.B) {
			t.Fatalf("NULL side: %+v %v", got, err)
		}
	}
	for _, bad := range [][]byte{{}, {1, 2, 3}, []byte("not a bitmap at all"), bitmap32(t, 1, 2, 3)[:10]} {
		if _, err := rbm32(bm, row.Datum{B: bad}); ferr.CodeOf(err) != ferr.UnknownServerError {
			t.Fatalf("% x: error %v, want UNKNOWN_SERVER_ERROR", bad, err)
		}
	}
}

// FuzzRbm32 feeds arbitrary bytes as the written bitmap: an error or a bitmap, never a panic.
func FuzzRbm32(f *testing.F) {
	f.Add(bitmap32(f, 1, 2, 3))
	f.Add(bitmap32(f, rangeOf(0, 5000)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = rbm32(row.Datum{B: bitmap32(t, 9)}, row.Datum{B: b})
	})
}

// Through PUT_KV: the second value for a key is unioned into the stored bitmap.
func TestRbm32Aggregation(t *testing.T) {
	s := metadata.Schema{Columns: []metadata.Column{
		{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
		{Name: "users", Type: metadata.DataType{Root: metadata.Bytes}, AggFunction: &metadata.AggFunction{Type: metadata.AggRBM32}},
	}, PrimaryKey: []string{"id"}}
	h := newHarness(t, Table{ID: 7, SchemaID: 1, Schema: s, Config: metadata.TableConfig{
		LogFormat: metadata.LogFormatArrow, MergeEngine: metadata.MergeEngineAggregation, DeleteBehavior: metadata.DeleteIgnore}})
	put := func(vals ...uint32) {
		t.Helper()
		h.put(nil, rec{key: []row.Datum{{I: 1}}, row: []row.Datum{{I: 1}, {B: bitmap32(t, vals...)}}})
	}
	put(1, 2)
	put(2, 3)
	put(70000)
	h.reopen()
	k, _ := row.EncodeKey(nil, h.tab.tbl.keyTypes, []row.Datum{{I: 1}})
	vals, err := h.tab.Lookup([][]byte{k}, nil)
	if err != nil || vals[0] == nil {
		t.Fatalf("lookup: %v", err)
	}
	sid, rb, _ := row.SplitValue(vals[0])
	d, err := h.tab.tbl.decodeRow(sid, rb, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := roaring.New()
	if err := got.UnmarshalBinary(d[1].B); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.ToArray(), []uint32{1, 2, 3, 70000}) {
		t.Fatalf("stored bitmap %v", got.ToArray())
	}
}
