package arrowlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

var compressions = []Compression{CompressionNone, CompressionZstd, CompressionLZ4Frame}

func TestRoundTripAllTypes(t *testing.T) {
	schema, err := ArrowSchema(allCols)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 200} {
		rows := genRows(uint64(n), allCols, n)
		cts := make([]byte, n)
		for i := range cts {
			cts[i] = byte(1 + i%4)
		}
		for _, c := range compressions {
			for _, changelog := range []bool{false, true} {
				t.Run(fmt.Sprintf("n=%d/%v/changelog=%v", n, c, changelog), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					rec, err := RowsToRecord(schema, allCols, rows, mem)
					if err != nil {
						t.Fatal(err)
					}
					var ct []byte
					if changelog {
						ct = cts
					}
					hdr := record.V0Header{SchemaID: 3, WriterID: 9, BatchSequence: 4}
					batch, err := AppendBatch(nil, hdr, rec, ct, c, 0)
					rec.Release()
					if err != nil {
						t.Fatal(err)
					}
					b := record.Batch(batch)
					if err := b.Validate(); err != nil {
						t.Fatal(err)
					}
					if b.AppendOnly() == changelog || int(b.RecordCount()) != n || b.SchemaID() != 3 {
						t.Fatalf("header: appendOnly=%v count=%d schema=%d", b.AppendOnly(), b.RecordCount(), b.SchemaID())
					}
					gotCT, got, err := Decode(schema, b.AppendOnly(), int(b.RecordCount()), b.Records(), mem)
					if err != nil {
						t.Fatal(err)
					}
					defer got.Release()
					if !bytes.Equal(gotCT, ct) {
						t.Fatalf("change types %v, want %v", gotCT, ct)
					}
					back, err := RecordToRows(got, allCols)
					if err != nil {
						t.Fatal(err)
					}
					assertRows(t, back, rows)
				})
			}
		}
	}
}

// TestDecodeUnalignedMessage places the Arrow message at an odd address, as Java does after
// an odd-length change-type vector.
func TestDecodeUnalignedMessage(t *testing.T) {
	schema, _ := ArrowSchema(allCols)
	rows := genRows(42, allCols, 5)
	rec, err := RowsToRecord(schema, allCols, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, c := range compressions {
		msg, err := Encode(nil, rec, nil, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := append(make([]byte, 1, len(msg)+1), msg...)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		_, got, err := Decode(schema, true, 5, buf[1:], mem)
		if err != nil {
			t.Fatal(err)
		}
		back, err := RecordToRows(got, allCols)
		if err != nil {
			t.Fatal(err)
		}
		assertRows(t, back, rows)
		got.Release()
		mem.AssertSize(t, 0)
	}
}

func TestZstdLevels(t *testing.T) {
	schema, _ := ArrowSchema(allCols)
	rows := genRows(5, allCols, 300)
	rec, err := RowsToRecord(schema, allCols, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, lvl := range []int{1, 3, 9, 22} {
		msg, err := Encode(nil, rec, nil, CompressionZstd, lvl)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := Decode(schema, true, 300, msg, nil)
		if err != nil {
			t.Fatalf("level %d: %v", lvl, err)
		}
		back, _ := RecordToRows(got, allCols)
		assertRows(t, back, rows)
		got.Release()
	}
}

// TestRawFallback checks that buffers compression would enlarge are stored raw (-1 prefix)
// and read back.
func TestRawFallback(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	rec, _ := RowsToRecord(schema, appendixCols, appendixRows, nil)
	defer rec.Release()
	msg, err := Encode(nil, rec, nil, CompressionZstd, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	raw := 0
	for i := 0; i < m.nBuffers; i++ {
		b := m.buffer(i)
		if b.length >= 8 && int64(binary.LittleEndian.Uint64(m.body[b.offset:])) == uncompressedMarker {
			raw++
		}
	}
	if raw == 0 {
		t.Fatalf("expected tiny buffers to be stored raw")
	}
	_, got, err := Decode(schema, true, 2, msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	back, _ := RecordToRows(got, appendixCols)
	assertRows(t, back, appendixRows)
}

func TestDecodeRejects(t *testing.T) {
	schema, _ := ArrowSchema(appendixCols)
	good := readHex(t, "ipc_uncompressed.hex")
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string]struct {
		appendOnly bool
		count      int
		data       []byte
	}{
		"empty":              {true, 2, nil},
		"short":              {true, 2, good[:7]},
		"no continuation":    {true, 2, mut(func(b []byte) []byte { b[0] = 0; return b })},
		"meta too long":      {true, 2, mut(func(b []byte) []byte { b[5] = 0x10; return b })},
		"meta not 8-padded":  {true, 2, mut(func(b []byte) []byte { b[4] = 0xf4; return b })},
		"truncated body":     {true, 2, good[:len(good)-16]},
		"row count differs":  {true, 3, good},
		"negative count":     {true, -1, good},
		"bad change type":    {false, 2, append([]byte{1, 9}, good...)},
		"short change types": {false, 2, []byte{1}},
		"wrong schema":       {true, 2, good[:0]},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, rec, err := Decode(schema, c.appendOnly, c.count, c.data, nil)
			if err == nil {
				rec.Release()
				t.Fatal("no error")
			}
			var fe *ferr.Error
			if !errors.As(err, &fe) || fe.Code != ferr.CorruptRecordException {
				t.Fatalf("error %v does not carry CORRUPT_RECORD_EXCEPTION", err)
			}
		})
	}
	// A schema with fewer columns than the message: leftover nodes are corrupt.
	short, _ := ArrowSchema(appendixCols[:2])
	if _, _, err := Decode(short, true, 2, good, nil); err == nil {
		t.Fatal("leftover nodes accepted")
	}
}

func TestDecimalBytes(t *testing.T) {
	// BigInteger.toByteArray forms.
	cases := []struct {
		b []byte
	}{{[]byte{0}}, {[]byte{0x7f}}, {[]byte{0x00, 0x80}}, {[]byte{0x80}}, {[]byte{0xff, 0x7f}}, {[]byte{0xff}}, {[]byte{0x00, 0xff}},
		{[]byte{0x4b, 0x3b, 0x4c, 0xa8, 0x5a, 0x86, 0xc4, 0x7a, 0x09, 0x8a, 0x22, 0x3f, 0xff, 0xff, 0xff, 0xff}}}
	for _, c := range cases {
		n, err := decimalFromBytes(c.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDecimalBytes(nil, n); !bytes.Equal(got, c.b) {
			t.Errorf("%x -> %x", c.b, got)
		}
	}
	if n, _ := decimalFromBytes([]byte{0xff, 0x7f}); n.LowBits() != uint64(0xffffffffffffff7f) || n.HighBits() != -1 {
		t.Errorf("-129 decoded as %v", n)
	}
	if _, err := decimalFromBytes(make([]byte, 17)); err == nil {
		t.Error("17-byte decimal accepted")
	}
}

func TestTimestampConversions(t *testing.T) {
	cases := []struct {
		ms    int64
		nanos int32
	}{{0, 0}, {-1, 999_999}, {-1001, 1000}, {1_700_000_000_123, 456_789}}
	for _, c := range cases {
		v := timestampToArrow(c.ms, c.nanos, 3 /* ns */)
		ms, nanos := timestampFromArrow(v, 3)
		if ms != c.ms || nanos != c.nanos {
			t.Errorf("ns: %d/%d -> %d -> %d/%d", c.ms, c.nanos, v, ms, nanos)
		}
	}
	// Seconds truncate toward zero, as Java's long division does.
	if v := timestampToArrow(-1500, 0, 0); v != -1 {
		t.Errorf("seconds of -1500ms = %d, want -1", v)
	}
}

func TestRowsToRecordRejects(t *testing.T) {
	schema, _ := ArrowSchema(allCols)
	rows := genRows(1, allCols, 1)
	bad := func(col int, d row.Datum) [][]row.Datum {
		r := append([]row.Datum(nil), rows[0]...)
		r[col] = d
		return [][]row.Datum{r}
	}
	cases := map[string][][]row.Datum{
		"tinyint overflow": bad(1, row.Datum{I: 300}),
		"binary length":    bad(9, row.Datum{B: []byte{1}}),
		"decimal too long": bad(12, row.Datum{B: make([]byte, 17)}),
		"map key null":     bad(26, row.Datum{Elems: []row.Datum{row.NullDatum}, Vals: []row.Datum{{I: 1}}}),
		"map lengths":      bad(26, row.Datum{Elems: []row.Datum{{B: []byte("k")}}}),
		"row arity":        bad(27, row.Datum{Elems: []row.Datum{{I: 1}}}),
		"short row":        {rows[0][:3]},
	}
	for name, rs := range cases {
		if rec, err := RowsToRecord(schema, allCols, rs, nil); err == nil {
			rec.Release()
			t.Errorf("%s: accepted", name)
		}
	}
}
