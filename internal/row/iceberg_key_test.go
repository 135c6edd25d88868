package row

import (
	"bytes"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// The expected hashes are the Iceberg spec's bucket-transform examples (Appendix B), so the
// key bytes are exactly what Iceberg hashes.
func TestEncodeIcebergKeyHashesAsIcebergSpec(t *testing.T) {
	for _, tc := range []struct {
		typ  metadata.DataType
		val  Datum
		hash int32
	}{
		{metadata.DataType{Root: metadata.Int}, Datum{I: 34}, 2017239379},
		{metadata.DataType{Root: metadata.BigInt}, Datum{I: 34}, 2017239379},
		{metadata.DataType{Root: metadata.Decimal, Precision: 4, Scale: 2}, Datum{I: 1420}, -500754589},
		{metadata.DataType{Root: metadata.Date}, Datum{I: 17486}, -653330422},
		{metadata.DataType{Root: metadata.Time}, Datum{I: 81068000}, -662762989},
		{metadata.DataType{Root: metadata.Timestamp, Precision: 6}, Datum{I: 1510871468000}, -2047944441},
		{metadata.DataType{Root: metadata.String}, Datum{B: []byte("iceberg")}, 1210000089},
		{metadata.DataType{Root: metadata.Bytes}, Datum{B: []byte{0, 1, 2, 3}}, -188683207},
	} {
		key, err := EncodeIcebergKey(nil, []metadata.DataType{tc.typ}, []Datum{tc.val})
		if err != nil {
			t.Fatalf("%v: %v", tc.typ.Root, err)
		}
		if h := int32(Murmur3(key, 0)); h != tc.hash {
			t.Errorf("%v %v: hash %d, want %d (key %x)", tc.typ.Root, tc.val, h, tc.hash, key)
		}
	}
	if _, err := EncodeIcebergKey(nil, []metadata.DataType{{Root: metadata.Int}, {Root: metadata.Int}}, []Datum{{I: 1}, {I: 2}}); err == nil {
		t.Fatal("two key columns accepted")
	}
	if _, err := EncodeIcebergKey(nil, []metadata.DataType{{Root: metadata.Boolean}}, []Datum{{I: 1}}); err == nil {
		t.Fatal("BOOLEAN key accepted")
	}
}

func TestTwosComplement(t *testing.T) {
	for v, want := range map[int64][]byte{0: {0}, 1: {1}, 127: {0x7f}, 128: {0, 0x80}, -1: {0xff}, -128: {0x80}, -129: {0xff, 0x7f}, 1420: {0x05, 0x8c}} {
		if got := twosComplement(v); !bytes.Equal(got, want) {
			t.Errorf("%d: %x, want %x", v, got, want)
		}
	}
}
