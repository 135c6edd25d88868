package batchstats

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/predicate"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

func testSchema() metadata.Schema {
	s := metadata.Schema{Columns: []metadata.Column{
		{Name: "id", Type: metadata.DataType{Root: metadata.BigInt}},
		{Name: "x", Type: metadata.DataType{Root: metadata.Double}},
		{Name: "s", Type: metadata.DataType{Root: metadata.String}},
		{Name: "n", Type: metadata.DataType{Root: metadata.Int}},
		{Name: "tags", Type: metadata.DataType{Root: metadata.Array, Elem: &metadata.DataType{Root: metadata.Int}}},
	}}
	s.AssignFieldIDs()
	return s
}

func encode(t testing.TB, s metadata.Schema, rows [][]row.Datum, comp arrowlog.Compression) record.Batch {
	t.Helper()
	as, err := arrowlog.ArrowSchema(s.Columns)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := arrowlog.RowsToRecord(as, s.Columns, rows, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	b, err := arrowlog.AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: -1, BatchSequence: -1}, rec, nil, comp, arrowlog.DefaultZstdLevel)
	if err != nil {
		t.Fatal(err)
	}
	return record.Batch(b)
}

func TestComputeExact(t *testing.T) {
	s := testSchema()
	rows := [][]row.Datum{
		{{I: 5}, {F: 2.5}, {B: []byte("pear")}, row.NullDatum, {Elems: []row.Datum{{I: 1}}}},
		{{I: -3}, {F: 0}, {B: []byte("apple")}, row.NullDatum, row.NullDatum},
		{{I: 9}, row.NullDatum, {B: []byte("zoo")}, row.NullDatum, {Elems: nil}},
	}
	st, err := Compute(encode(t, s, rows, arrowlog.CompressionZstd), s, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 3 || len(st.Columns) != 5 {
		t.Fatalf("%+v", st)
	}
	id := st.Columns[0]
	if !id.HasMinMax || id.Min.I != -3 || id.Max.I != 9 || id.NullCount != 0 {
		t.Errorf("id: %+v", id)
	}
	x := st.Columns[1]
	if !x.HasMinMax || x.NullCount != 1 || x.Min.F >= 0 || x.Max.F != 2.5 {
		t.Errorf("x (zero min widened below -0.0): %+v", x)
	}
	if c := st.Columns[2]; string(c.Min.B) != "apple" || string(c.Max.B) != "zoo" {
		t.Errorf("s: %+v", c)
	}
	if c := st.Columns[3]; c.HasMinMax || c.NullCount != 3 {
		t.Errorf("n (all NULL): %+v", c)
	}
	if c := st.Columns[4]; c.HasMinMax || c.NullCount != 1 {
		t.Errorf("tags (unordered): %+v", c)
	}
	// A column added after the batch was written is NULL in all its rows.
	if c, ok := st.Column(s.HighestFieldID + 1); !ok || c.NullCount != 3 || c.HasMinMax {
		t.Errorf("added column: %+v %v", c, ok)
	}
	again, err := Decode(Encode(nil, st))
	if err != nil || !bytes.Equal(Encode(nil, again), Encode(nil, st)) {
		t.Errorf("encode round trip: %v\n%+v\n%+v", err, again, st)
	}
}

func TestNaNDropsMinMax(t *testing.T) {
	s := testSchema()
	rows := [][]row.Datum{
		{{I: 1}, {F: math.NaN()}, {B: nil}, {I: 1}, row.NullDatum},
		{{I: 2}, {F: 1}, {B: []byte("a")}, {I: 2}, row.NullDatum},
	}
	st, err := Compute(encode(t, s, rows, arrowlog.CompressionNone), s, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if st.Columns[1].HasMinMax {
		t.Errorf("NaN column has min/max: %+v", st.Columns[1])
	}
}

// eval is the reference: SQL evaluation of p over one row (column i has field id i).
func eval(p predicate.Predicate, s metadata.Schema, r []row.Datum) bool {
	switch p := p.(type) {
	case predicate.And:
		for _, c := range p {
			if !eval(c, s, r) {
				return false
			}
		}
		return true
	case predicate.Or:
		for _, c := range p {
			if eval(c, s, r) {
				return true
			}
		}
		return false
	case *predicate.Leaf:
		v := r[p.FieldID]
		switch p.Op {
		case predicate.IsNull:
			return v.Null
		case predicate.IsNotNull:
			return !v.Null
		}
		if v.Null {
			return false
		}
		cmp := func(l row.Datum) (int, bool) { return predicate.Compare(p.Type, v, l) }
		test := func(l row.Datum, f func(int) bool) bool {
			c, ok := cmp(l)
			return ok && f(c)
		}
		switch p.Op {
		case predicate.Equal:
			return test(p.Literals[0], func(c int) bool { return c == 0 })
		case predicate.NotEqual:
			return test(p.Literals[0], func(c int) bool { return c != 0 })
		case predicate.LessThan:
			return test(p.Literals[0], func(c int) bool { return c < 0 })
		case predicate.LessOrEqual:
			return test(p.Literals[0], func(c int) bool { return c <= 0 })
		case predicate.GreaterThan:
			return test(p.Literals[0], func(c int) bool { return c > 0 })
		case predicate.GreaterOrEqual:
			return test(p.Literals[0], func(c int) bool { return c >= 0 })
		case predicate.In:
			for _, l := range p.Literals {
				if test(l, func(c int) bool { return c == 0 }) {
					return true
				}
			}
			return false
		case predicate.NotIn:
			for _, l := range p.Literals {
				if !test(l, func(c int) bool { return c != 0 }) {
					return false
				}
			}
			return true
		case predicate.StartsWith:
			return bytes.HasPrefix(v.B, p.Literals[0].B)
		case predicate.Contains:
			return bytes.Contains(v.B, p.Literals[0].B)
		case predicate.EndsWith:
			return bytes.HasSuffix(v.B, p.Literals[0].B)
		}
	}
	panic("unknown predicate")
}

func randValue(rng *rand.Rand, root metadata.TypeRoot) row.Datum {
	if rng.IntN(6) == 0 {
		return row.NullDatum
	}
	switch root {
	case metadata.BigInt, metadata.Int:
		return row.Datum{I: int64(rng.IntN(41) - 20)}
	case metadata.Double:
		switch rng.IntN(12) {
		case 0:
			return row.Datum{F: math.Copysign(0, -1)}
		case 1:
			return row.Datum{F: 0}
		case 2:
			return row.Datum{F: math.NaN()}
		case 3:
			return row.Datum{F: math.Inf(-1)}
		}
		return row.Datum{F: float64(rng.IntN(21)-10) / 2}
	case metadata.String:
		const alpha = "abc"
		b := make([]byte, rng.IntN(4))
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return row.Datum{B: b}
	}
	return row.NullDatum
}

func randLeaf(rng *rand.Rand, s metadata.Schema) *predicate.Leaf {
	ci := rng.IntN(4)
	c := s.Columns[ci]
	op := predicate.Op(rng.IntN(13))
	if (op == predicate.StartsWith || op == predicate.Contains || op == predicate.EndsWith) && c.Type.Root != metadata.String {
		op = predicate.Equal
	}
	l := &predicate.Leaf{Op: op, FieldID: c.ID, Name: c.Name, Type: c.Type}
	n := 1
	switch op {
	case predicate.IsNull, predicate.IsNotNull:
		n = 0
	case predicate.In, predicate.NotIn:
		n = 1 + rng.IntN(3)
	}
	for range n {
		l.Literals = append(l.Literals, randValue(rng, c.Type.Root))
	}
	return l
}

func randPred(rng *rand.Rand, s metadata.Schema, depth int) predicate.Predicate {
	if depth == 0 || rng.IntN(3) > 0 {
		return randLeaf(rng, s)
	}
	kids := make([]predicate.Predicate, 1+rng.IntN(3))
	for i := range kids {
		kids[i] = randPred(rng, s, depth-1)
	}
	if rng.IntN(2) == 0 {
		return predicate.And(kids)
	}
	return predicate.Or(kids)
}

// TestNeverPrunesAMatch is the pruning invariant over random batches and predicates: when
// any row of a batch satisfies a predicate, MayMatch over the batch's computed statistics
// (and over their encoded form) is true.
func TestNeverPrunesAMatch(t *testing.T) {
	s := testSchema()
	rng := rand.New(rand.NewPCG(1, 2))
	pruned := 0
	for iter := 0; iter < 400; iter++ {
		rows := make([][]row.Datum, 1+rng.IntN(8))
		for i := range rows {
			rows[i] = []row.Datum{randValue(rng, metadata.BigInt), randValue(rng, metadata.Double), randValue(rng, metadata.String), randValue(rng, metadata.Int), row.NullDatum}
		}
		st, err := Compute(encode(t, s, rows, arrowlog.CompressionNone), s, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(Encode(nil, st))
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			p := randPred(rng, s, 3)
			match := false
			for _, r := range rows {
				match = match || eval(p, s, r)
			}
			may := p.MayMatch(st)
			if match && (!may || !p.MayMatch(dec)) {
				t.Fatalf("pruned a batch with a matching row: %s over %v (stats %+v)", p, rows, st)
			}
			if !may {
				pruned++
			}
		}
	}
	if pruned == 0 {
		t.Error("nothing was ever pruned: the test proves nothing")
	}
	t.Logf("%d of %d evaluations pruned", pruned, 400*50)
}

func BenchmarkCompute(b *testing.B) {
	s := testSchema()
	rows := make([][]row.Datum, 1000)
	for i := range rows {
		rows[i] = []row.Datum{{I: int64(i)}, {F: float64(i)}, {B: []byte(fmt.Sprintf("row-%06d", i))}, {I: int64(i % 7)}, row.NullDatum}
	}
	batch := encode(b, s, rows, arrowlog.CompressionZstd)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(batch, s, memory.DefaultAllocator); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
}

// TestFastPathAgreesWithReader: the typed fast path finds the same bounds as the generic
// row.Datum reader.
func TestFastPathAgreesWithReader(t *testing.T) {
	s := testSchema()
	as, err := arrowlog.ArrowSchema(s.Columns)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 300; iter++ {
		rows := make([][]row.Datum, 1+rng.IntN(8))
		for i := range rows {
			rows[i] = []row.Datum{randValue(rng, metadata.BigInt), randValue(rng, metadata.Double), randValue(rng, metadata.String), randValue(rng, metadata.Int), row.NullDatum}
		}
		rec, err := arrowlog.RowsToRecord(as, s.Columns, rows, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for ci := 0; ci < 4; ci++ {
			fast := Column{Type: s.Columns[ci].Type}
			slow := fast
			okFast, handled := fastMinMax(&fast, rec.Column(ci))
			if !handled {
				t.Fatalf("column %d not handled by the fast path", ci)
			}
			read, err := arrowlog.ColumnReader(rec.Column(ci), slow.Type)
			if err != nil {
				t.Fatal(err)
			}
			okSlow := minMax(&slow, int(rec.NumRows()), read)
			if okFast != okSlow || okFast && (fast.Min.I != slow.Min.I || fast.Max.I != slow.Max.I ||
				fast.Min.F != slow.Min.F || fast.Max.F != slow.Max.F || !bytes.Equal(fast.Min.B, slow.Min.B) || !bytes.Equal(fast.Max.B, slow.Max.B)) {
				t.Fatalf("column %d over %v: fast %v %+v, reader %v %+v", ci, rows, okFast, fast, okSlow, slow)
			}
		}
		rec.Release()
	}
}

func TestHighestFieldIDIsConservative(t *testing.T) {
	s := testSchema()
	s.HighestFieldID = 0 // understated: the columns say otherwise
	if got := highestFieldID(s); got != 4 {
		t.Errorf("understated HighestFieldID: %d, want 4", got)
	}
	s.Columns[1].ID = metadata.UnknownID
	if got := highestFieldID(s); got != math.MaxInt32 {
		t.Errorf("unknown column id: %d", got)
	}
}

// FuzzDecode: sidecar bytes are read from disk; Decode never panics on any input, and the
// statistics it accepts can be queried.
func FuzzDecode(f *testing.F) {
	s := testSchema()
	rows := [][]row.Datum{{{I: 5}, {F: 2.5}, {B: []byte("pear")}, row.NullDatum, row.NullDatum}}
	st, err := Compute(encode(f, s, rows, arrowlog.CompressionNone), s, memory.DefaultAllocator)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(Encode(nil, st))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Decode(b)
		if err != nil {
			return
		}
		st.Column(0)
		st.Column(1 << 30)
	})
}

// TestFromRecordMatchesCompute: statistics taken from a record the caller decoded are
// byte-for-byte what Compute finds decoding the batch itself, and a record that is not the
// batch's (other row count) is refused rather than summarised.
func TestFromRecordMatchesCompute(t *testing.T) {
	s := testSchema()
	as, err := arrowlog.ArrowSchema(s.Columns)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 100; iter++ {
		rows := make([][]row.Datum, 1+rng.IntN(20))
		for i := range rows {
			rows[i] = []row.Datum{randValue(rng, metadata.BigInt), randValue(rng, metadata.Double), randValue(rng, metadata.String), randValue(rng, metadata.Int), row.NullDatum}
		}
		b := encode(t, s, rows, arrowlog.CompressionNone)
		want, err := Compute(b, s, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		_, rec, err := arrowlog.Decode(as, b.AppendOnly(), int(b.RecordCount()), b.Records(), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromRecord(b, s, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(Encode(nil, got), Encode(nil, want)) {
			t.Fatalf("FromRecord %+v, Compute %+v over %v", got, want, rows)
		}
	}
	one := encode(t, s, [][]row.Datum{{{I: 1}, {F: 1}, {B: []byte("a")}, {I: 1}, row.NullDatum}}, arrowlog.CompressionNone)
	two := encode(t, s, [][]row.Datum{{{I: 1}, {F: 1}, {B: []byte("a")}, {I: 1}, row.NullDatum}, {{I: 2}, {F: 2}, {B: []byte("b")}, {I: 2}, row.NullDatum}}, arrowlog.CompressionNone)
	_, rec, err := arrowlog.Decode(as, two.AppendOnly(), int(two.RecordCount()), two.Records(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if st, err := FromRecord(one, s, rec); err == nil {
		t.Fatalf("statistics %+v of a 1-record batch from a 2-row record; want an error", st)
	}
}
