package kvstore

import (
	"bufio"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// rbm64Fixture is one line of testdata/rbm64/fixtures.txt, written by Java's RoaringBitmap
// 1.3.0 (testdata/rbm64/Fixtures.java): two bitmaps, their union, and its values.
type rbm64Fixture struct {
	name        string
	a, b, union []byte
	unionValues string
}

func rbm64Fixtures(t testing.TB) []rbm64Fixture {
	t.Helper()
	f, err := os.Open("testdata/rbm64/fixtures.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rbm64Fixture
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "|")
		if len(p) != 5 {
			t.Fatalf("fixture line with %d fields", len(p))
		}
		x := rbm64Fixture{name: p[0], unionValues: "[" + p[4] + "]"}
		for i, dst := range []*[]byte{&x.a, &x.b, &x.union} {
			if *dst, err = hex.DecodeString(p[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, x)
	}
	if err := sc.Err(); err != nil || len(out) == 0 {
		t.Fatalf("fixtures: %d, %v", len(out), err)
	}
	return out
}

// Java's bytes are read as Java reads them, and the union of two of Java's bitmaps has
// Java's values. With STROM_RBM64_OUT set, the union's bytes are written there, one hex line
// per fixture, for Fixtures.java to read back with Java's deserializer (done when this was
// written: Java read every one with the values below).
func TestRbm64JavaFixtures(t *testing.T) {
	var written []string
	for _, f := range rbm64Fixtures(t) {
		ju, err := readBitmap64(f.union)
		if err != nil {
			t.Fatalf("%s: Java's union: %v", f.name, err)
		}
		if got := ju.String(); got != f.unionValues {
			t.Fatalf("%s: Java's union read as %.200s\nwant %.200s", f.name, got, f.unionValues)
		}
		got, err := rbm64(row.Datum{B: f.a}, row.Datum{B: f.b})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		u, err := readBitmap64(got.B)
		if err != nil {
			t.Fatalf("%s: our union unreadable: %v", f.name, err)
		}
		if u.String() != f.unionValues {
			t.Fatalf("%s: union %.200s\nwant %.200s", f.name, u.String(), f.unionValues)
		}
		if string(got.B) == string(f.union) {
			t.Logf("%s: byte-identical to Java's", f.name)
		}
		written = append(written, hex.EncodeToString(got.B))
	}
	if out := os.Getenv("STROM_RBM64_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(strings.Join(written, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRbm64NullsAndCorruptBytes(t *testing.T) {
	f := rbm64Fixtures(t)[0]
	bm := row.Datum{B: f.a}
	for _, c := range [][2]row.Datum{{row.NullDatum, bm}, {bm, row.NullDatum}} {
		got, err := rbm64(c[0], c[1])
		if err != nil || string(got.B) != string(f.a) {
			t.Fatalf("NULL side: %v", err)
		}
	}
	bad := [][]byte{{}, {2}, {1}, f.a[:len(f.a)-1], f.a[:20], append([]byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 9}, f.a[10:]...)}
	for _, b := range bad {
		if _, err := rbm64(bm, row.Datum{B: b}); ferr.CodeOf(err) != ferr.UnknownServerError {
			t.Fatalf("% x: error %v, want UNKNOWN_SERVER_ERROR", b, err)
		}
	}
	if got, err := rbm64(row.Datum{B: []byte{0}}, row.Datum{B: []byte{0}}); err != nil || string(got.B) != "\x00" {
		t.Fatalf("empty ∪ empty = % x, %v", got.B, err)
	}
}

// FuzzRbm64 feeds arbitrary bytes as the written bitmap: an error or a bitmap whose bytes read
// back to the same values, never a panic.
func FuzzRbm64(f *testing.F) {
	for _, x := range rbm64Fixtures(f) {
		f.Add(x.b)
	}
	acc := rbm64Fixtures(f)[0].a
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := rbm64(row.Datum{B: acc}, row.Datum{B: b})
		if err != nil {
			return
		}
		again, err := readBitmap64(got.B)
		if err != nil {
			t.Fatalf("our own bytes unreadable: %v", err)
		}
		if u, _ := rbm64(row.Datum{B: got.B}, row.Datum{B: []byte{0}}); string(u.B) != string(appendBitmap64(nil, again)) {
			t.Fatal("not stable")
		}
	})
}

// Through PUT_KV: the second value for a key is unioned into the stored bitmap.
func TestRbm64Aggregation(t *testing.T) {
	s := metadata.Schema{Columns: []metadata.Column{
		{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
		{Name: "users", Type: metadata.DataType{Root: metadata.Bytes}, AggFunction: &metadata.AggFunction{Type: metadata.AggRBM64}},
	}, PrimaryKey: []string{"id"}}
	h := newHarness(t, Table{ID: 7, SchemaID: 1, Schema: s, Config: metadata.TableConfig{
		LogFormat: metadata.LogFormatArrow, MergeEngine: metadata.MergeEngineAggregation, DeleteBehavior: metadata.DeleteIgnore}})
	f := rbm64Fixtures(t)[len(rbm64Fixtures(t))-1] // node256: the largest tree
	for _, b := range [][]byte{f.a, f.b} {
		h.put(nil, rec{key: []row.Datum{{I: 1}}, row: []row.Datum{{I: 1}, {B: b}}})
	}
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
	got, err := readBitmap64(d[1].B)
	if err != nil || got.String() != f.unionValues {
		t.Fatalf("stored bitmap %.200s (%v)\nwant %.200s", got, err, f.unionValues)
	}
}
