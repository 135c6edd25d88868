package predicate

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/proto/flusspb"
)

// fakeStats is one column (field id 0) of a batch of rows rows.
type fakeStats struct {
	rows int64
	col  ColumnStats
	ok   bool
}

func (f fakeStats) RowCount() int64 { return f.rows }
func (f fakeStats) Column(id int32) (ColumnStats, bool) {
	if id != 0 {
		return ColumnStats{}, false
	}
	return f.col, f.ok
}

var bigint = metadata.DataType{Root: metadata.BigInt}

func ints(rows, nulls int64, lo, hi int64) fakeStats {
	return fakeStats{rows: rows, ok: true, col: ColumnStats{Type: bigint, NullCount: nulls, HasMinMax: rows > nulls, Min: row.Datum{I: lo}, Max: row.Datum{I: hi}}}
}

func leaf(op Op, lits ...int64) *Leaf {
	l := &Leaf{Op: op, FieldID: 0, Name: "id", Type: bigint}
	for _, v := range lits {
		l.Literals = append(l.Literals, row.Datum{I: v})
	}
	return l
}

func TestLeafOverIntegerStatistics(t *testing.T) {
	s := ints(100, 0, 10, 20) // values in [10, 20], no NULLs
	cases := []struct {
		p    *Leaf
		want bool
	}{
		{leaf(Equal, 9), false}, {leaf(Equal, 10), true}, {leaf(Equal, 20), true}, {leaf(Equal, 21), false},
		{leaf(NotEqual, 15), true},
		{leaf(LessThan, 10), false}, {leaf(LessThan, 11), true},
		{leaf(LessOrEqual, 9), false}, {leaf(LessOrEqual, 10), true},
		{leaf(GreaterThan, 20), false}, {leaf(GreaterThan, 19), true},
		{leaf(GreaterOrEqual, 21), false}, {leaf(GreaterOrEqual, 20), true},
		{leaf(IsNull), false}, {leaf(IsNotNull), true},
		{leaf(In, 1, 2, 30), false}, {leaf(In, 1, 15), true},
		{leaf(NotIn, 10, 20), true},
	}
	for _, c := range cases {
		if got := c.p.MayMatch(s); got != c.want {
			t.Errorf("%s %v over [10,20]: got %v, want %v", c.p.Op, c.p.Literals, got, c.want)
		}
	}
	// A constant column: <> and NOT IN of its only value prove no match.
	k := ints(5, 0, 7, 7)
	if leaf(NotEqual, 7).MayMatch(k) || leaf(NotIn, 7, 8).MayMatch(k) {
		t.Error("x <> 7 / x NOT IN (7, 8) over a column of 7s may not match")
	}
	if !leaf(NotEqual, 8).MayMatch(k) || !leaf(NotIn, 8).MayMatch(k) {
		t.Error("x <> 8 over a column of 7s must match")
	}
}

func TestNullSemantics(t *testing.T) {
	allNull := ints(10, 10, 0, 0)
	for _, op := range []Op{Equal, NotEqual, LessThan, LessOrEqual, GreaterThan, GreaterOrEqual, In, NotIn} {
		if leaf(op, 5).MayMatch(allNull) {
			t.Errorf("%s over an all-NULL column may match", op)
		}
	}
	if !leaf(IsNull).MayMatch(allNull) || leaf(IsNotNull).MayMatch(allNull) {
		t.Error("IS NULL / IS NOT NULL over an all-NULL column")
	}
	some := ints(10, 3, 1, 2)
	if !leaf(IsNull).MayMatch(some) || !leaf(IsNotNull).MayMatch(some) {
		t.Error("IS NULL / IS NOT NULL over a column with some NULLs")
	}
	// A NULL literal never prunes, whatever the column holds.
	l := &Leaf{Op: Equal, Name: "id", Type: bigint, Literals: []row.Datum{row.NullDatum}}
	if !l.MayMatch(ints(10, 0, 1, 2)) {
		t.Error("= NULL pruned")
	}
	// Unknown null count: IS NULL / IS NOT NULL may match.
	u := ints(10, 0, 1, 2)
	u.col.NullCount = -1
	if !leaf(IsNull).MayMatch(u) || !leaf(IsNotNull).MayMatch(u) {
		t.Error("unknown null count pruned")
	}
	// Unknown column (no statistics): everything may match.
	if !leaf(Equal, 100).MayMatch(fakeStats{rows: 10}) {
		t.Error("a column without statistics pruned")
	}
}

func TestAndOr(t *testing.T) {
	s := ints(10, 0, 10, 20)
	yes, no := leaf(Equal, 15), leaf(Equal, 50)
	and1, and2 := And{yes, no}, And{yes, yes}
	if and1.MayMatch(s) || !and2.MayMatch(s) {
		t.Error("AND")
	}
	or1, or2 := Or{no, yes}, Or{no, no}
	if !or1.MayMatch(s) || or2.MayMatch(s) {
		t.Error("OR")
	}
	nested := Or{And{no, yes}, yes}
	if !nested.MayMatch(s) {
		t.Error("nested")
	}
}

func TestFloatsNaNAndZeros(t *testing.T) {
	dbl := metadata.DataType{Root: metadata.Double}
	s := fakeStats{rows: 4, ok: true, col: ColumnStats{Type: dbl, NullCount: 0, HasMinMax: true, Min: row.Datum{F: 1}, Max: row.Datum{F: 2}}}
	nan := &Leaf{Op: Equal, Name: "d", Type: dbl, Literals: []row.Datum{{F: math.NaN()}}}
	if !nan.MayMatch(s) {
		t.Error("= NaN pruned")
	}
	gt := &Leaf{Op: GreaterThan, Name: "d", Type: dbl, Literals: []row.Datum{{F: 2}}}
	if gt.MayMatch(s) {
		t.Error("> 2 over [1, 2] may match")
	}
}

func TestStringFunctions(t *testing.T) {
	str := metadata.DataType{Root: metadata.String}
	s := fakeStats{rows: 4, ok: true, col: ColumnStats{Type: str, NullCount: 0, HasMinMax: true, Min: row.Datum{B: []byte("banana")}, Max: row.Datum{B: []byte("cherry")}}}
	sw := func(p string) bool {
		return (&Leaf{Op: StartsWith, Name: "s", Type: str, Literals: []row.Datum{{B: []byte(p)}}}).MayMatch(s)
	}
	for p, want := range map[string]bool{"b": true, "ban": true, "bananas": true, "bb": true, "c": true, "ch": true, "ci": false, "a": false, "d": false, "": true, "cherryz": false} {
		if got := sw(p); got != want {
			t.Errorf("STARTS WITH %q over [banana, cherry]: got %v, want %v", p, got, want)
		}
	}
	for _, op := range []Op{Contains, EndsWith} {
		if !(&Leaf{Op: op, Name: "s", Type: str, Literals: []row.Datum{{B: []byte("zzz")}}}).MayMatch(s) {
			t.Errorf("%s pruned by min/max", op)
		}
	}
}

func TestMismatchedTypesDoNotPrune(t *testing.T) {
	s := ints(10, 0, 10, 20)
	s.col.Type = metadata.DataType{Root: metadata.String}
	if !leaf(Equal, 50).MayMatch(s) {
		t.Error("an integer predicate pruned over a string column's statistics")
	}
	s.col.Type = metadata.DataType{Root: metadata.Int} // widened INT -> BIGINT: same order
	if leaf(Equal, 50).MayMatch(s) {
		t.Error("INT statistics not used for a BIGINT predicate")
	}
}

func schema() metadata.Schema {
	s := metadata.Schema{Columns: []metadata.Column{
		{Name: "id", Type: bigint},
		{Name: "s", Type: metadata.DataType{Root: metadata.String}},
		{Name: "d", Type: metadata.DataType{Root: metadata.Decimal, Precision: 30, Scale: 2}},
		{Name: "ts", Type: metadata.DataType{Root: metadata.Timestamp, Precision: 6}},
		{Name: "day", Type: metadata.DataType{Root: metadata.Date}},
	}}
	s.AssignFieldIDs()
	return s
}

func pbLeaf(fn, field int32, lits ...*flusspb.PbLiteralValue) *flusspb.PbPredicate {
	return &flusspb.PbPredicate{Type: proto.Int32(typeLeaf), Leaf: &flusspb.PbLeafPredicate{Function: proto.Int32(fn), FieldId: proto.Int32(field), Literals: lits}}
}

func TestDecode(t *testing.T) {
	sch := schema()
	bigLit := &flusspb.PbLiteralValue{LiteralType: proto.Int32(4), IsNull: proto.Bool(false), BigintValue: proto.Int64(19500)}
	str := &flusspb.PbLiteralValue{LiteralType: proto.Int32(8), IsNull: proto.Bool(false), StringValue: proto.String("ab")}
	dec := &flusspb.PbLiteralValue{LiteralType: proto.Int32(9), IsNull: proto.Bool(false), DecimalValue: proto.Int64(-12345)}
	ts := &flusspb.PbLiteralValue{LiteralType: proto.Int32(12), IsNull: proto.Bool(false), TimestampMillisValue: proto.Int64(5), TimestampNanoOfMillisValue: proto.Int32(7)}
	day := &flusspb.PbLiteralValue{LiteralType: proto.Int32(10), IsNull: proto.Bool(false), BigintValue: proto.Int64(20000)}
	pb := &flusspb.PbPredicate{Type: proto.Int32(typeCompound), Compound: &flusspb.PbCompoundPredicate{Function: proto.Int32(compoundOr), Children: []*flusspb.PbPredicate{
		pbLeaf(int32(GreaterOrEqual), 0, bigLit),
		pbLeaf(int32(StartsWith), 1, str),
		pbLeaf(int32(Equal), 2, dec),
		pbLeaf(int32(LessThan), 3, ts),
		pbLeaf(int32(In), 4, day, day),
		pbLeaf(int32(IsNull), 1),
	}}}
	p, err := Decode(pb, sch)
	if err != nil {
		t.Fatal(err)
	}
	or := p.(Or)
	if l := or[0].(*Leaf); l.Op != GreaterOrEqual || l.Literals[0].I != 19500 {
		t.Errorf("leaf 0: %+v", l)
	}
	if l := or[2].(*Leaf); string(l.Literals[0].B) != string(twosComplement(new(big.Int).SetInt64(-12345))) {
		t.Errorf("decimal literal: %x", l.Literals[0].B)
	}
	if l := or[3].(*Leaf); l.Literals[0].I != 5 || l.Literals[0].Nanos != 7 {
		t.Errorf("timestamp literal: %+v", l.Literals[0])
	}
	bad := []*flusspb.PbPredicate{
		{Type: proto.Int32(7)},
		{Type: proto.Int32(typeLeaf)},
		pbLeaf(13, 0, bigLit),
		pbLeaf(int32(Equal), 99, bigLit),
		pbLeaf(int32(Equal), 0),
		pbLeaf(int32(IsNull), 0, bigLit),
		pbLeaf(int32(In), 0),
		pbLeaf(int32(StartsWith), 0, bigLit),
		{Type: proto.Int32(typeCompound), Compound: &flusspb.PbCompoundPredicate{Function: proto.Int32(0)}},
		{Type: proto.Int32(typeCompound), Compound: &flusspb.PbCompoundPredicate{Function: proto.Int32(5), Children: []*flusspb.PbPredicate{pbLeaf(int32(IsNull), 0)}}},
	}
	for i, b := range bad {
		if _, err := Decode(b, sch); !errors.Is(err, ErrInvalid) {
			t.Errorf("bad %d: err %v", i, err)
		}
	}
	deep := pbLeaf(int32(IsNull), 0)
	for range maxDepth + 2 {
		deep = &flusspb.PbPredicate{Type: proto.Int32(typeCompound), Compound: &flusspb.PbCompoundPredicate{Function: proto.Int32(0), Children: []*flusspb.PbPredicate{deep}}}
	}
	if _, err := Decode(deep, sch); !errors.Is(err, ErrInvalid) {
		t.Errorf("deep: %v", err)
	}
}

func TestTwosComplement(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 127, 128, -128, -129, 255, 256, -256, math.MaxInt64, math.MinInt64} {
		x := new(big.Int).SetInt64(v)
		if got := signedBig(twosComplement(x)); got.Cmp(x) != 0 {
			t.Errorf("%d: round trip %s", v, got)
		}
	}
}

// FuzzDecode: Decode never panics on any message, and what it accepts evaluates without
// panicking over any statistics.
func FuzzDecode(f *testing.F) {
	bigLit := &flusspb.PbLiteralValue{LiteralType: proto.Int32(4), IsNull: proto.Bool(false), BigintValue: proto.Int64(1)}
	seed, _ := proto.Marshal(pbLeaf(int32(Equal), 0, bigLit))
	f.Add(seed)
	seed, _ = proto.Marshal(&flusspb.PbPredicate{Type: proto.Int32(1), Compound: &flusspb.PbCompoundPredicate{Function: proto.Int32(1), Children: []*flusspb.PbPredicate{pbLeaf(int32(In), 2, bigLit, bigLit), pbLeaf(int32(StartsWith), 1, bigLit)}}})
	f.Add(seed)
	sch := schema()
	f.Fuzz(func(t *testing.T, b []byte) {
		var pb flusspb.PbPredicate
		if proto.Unmarshal(b, &pb) != nil {
			return
		}
		p, err := Decode(&pb, sch)
		if err != nil {
			return
		}
		p.MayMatch(ints(10, 2, -5, 5))
		p.MayMatch(fakeStats{rows: 3})
		_ = p.String()
	})
}

func TestLiteralRoundTrip(t *testing.T) {
	cases := []struct {
		t metadata.DataType
		d row.Datum
	}{
		{metadata.DataType{Root: metadata.Boolean}, row.Datum{I: 1}},
		{metadata.DataType{Root: metadata.TinyInt}, row.Datum{I: -7}},
		{metadata.DataType{Root: metadata.SmallInt}, row.Datum{I: 300}},
		{metadata.DataType{Root: metadata.Int}, row.Datum{I: -70000}},
		{metadata.DataType{Root: metadata.BigInt}, row.Datum{I: 1 << 40}},
		{metadata.DataType{Root: metadata.Float}, row.Datum{F: 1.5}},
		{metadata.DataType{Root: metadata.Double}, row.Datum{F: -2.25}},
		{metadata.DataType{Root: metadata.Char, Length: 3}, row.Datum{B: []byte("abc")}},
		{metadata.DataType{Root: metadata.String}, row.Datum{B: []byte("héllo")}},
		{metadata.DataType{Root: metadata.Decimal, Precision: 10, Scale: 2}, row.Datum{I: -1234}},
		{metadata.DataType{Root: metadata.Decimal, Precision: 38, Scale: 2}, row.Datum{B: twosComplement(big.NewInt(-99999))}},
		{metadata.DataType{Root: metadata.Date}, row.Datum{I: 19000}},
		{metadata.DataType{Root: metadata.Time}, row.Datum{I: 3600000}},
		{metadata.DataType{Root: metadata.Timestamp, Precision: 9}, row.Datum{I: 1700000000000, Nanos: 999}},
		{metadata.DataType{Root: metadata.TimestampLTZ, Precision: 3}, row.Datum{I: -5}},
		{metadata.DataType{Root: metadata.Binary, Length: 2}, row.Datum{B: []byte{1, 2}}},
		{metadata.DataType{Root: metadata.Bytes}, row.Datum{B: []byte{0, 255}}},
		{metadata.DataType{Root: metadata.Bytes}, row.NullDatum},
	}
	for _, c := range cases {
		pb, err := LiteralPB(c.t, c.d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := literal(pb, c.t)
		if err != nil {
			t.Fatalf("%s: %v", c.t, err)
		}
		if got.Null != c.d.Null || got.I != c.d.I || got.F != c.d.F || string(got.B) != string(c.d.B) || got.Nanos != c.d.Nanos {
			t.Errorf("%s: %+v, want %+v", c.t, got, c.d)
		}
	}
	if _, err := LiteralPB(metadata.DataType{Root: metadata.Array}, row.Datum{}); err == nil {
		t.Error("ARRAY literal encoded")
	}
}
