package row

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// The expected bytes are written out from the layout of PaimonBinaryRowWriter (see
// EncodePaimonKey); the pyfluss suite checks the same against a real client
// (tests/compat/test_paimon_keys.py).
func TestEncodePaimonKey(t *testing.T) {
	ty := func(r metadata.TypeRoot, p int) metadata.DataType { return metadata.DataType{Root: r, Precision: p} }
	long := "a-region-name-longer-than-seven-bytes" // 37 bytes
	for _, c := range []struct {
		name  string
		types []metadata.DataType
		vals  []Datum
		want  string
	}{
		{"int and short string", []metadata.DataType{ty(metadata.Int, 0), ty(metadata.String, 0)},
			[]Datum{{I: 3}, {B: []byte("eu")}},
			"0000000000000000" + "0300000000000000" + "6575000000000082"},
		{"long string in the variable part", []metadata.DataType{ty(metadata.Int, 0), ty(metadata.String, 0)},
			[]Datum{{I: -1}, {B: []byte(long)}},
			"0000000000000000" + "ffffffff00000000" + "2500000018000000" + hex.EncodeToString([]byte(long)) + "000000"},
		{"seven bytes stay in the slot", []metadata.DataType{ty(metadata.Bytes, 0)},
			[]Datum{{B: []byte("1234567")}},
			"0000000000000000" + "3132333435363787"},
		{"bigint, smallint, boolean, double", []metadata.DataType{ty(metadata.BigInt, 0), ty(metadata.SmallInt, 0), ty(metadata.Boolean, 0), ty(metadata.Double, 0)},
			[]Datum{{I: 1 << 40}, {I: -2}, {I: 1}, {F: 1.5}},
			"0000000000000000" + "0000000000010000" + "feff000000000000" + "0100000000000000" + "000000000000f83f"},
		{"compact decimal and millisecond timestamp", []metadata.DataType{ty(metadata.Decimal, 10), ty(metadata.Timestamp, 3)},
			[]Datum{{I: 12345}, {I: 1000}},
			"0000000000000000" + "3930000000000000" + "e803000000000000"},
		{"wide decimal and nanosecond timestamp", []metadata.DataType{ty(metadata.Decimal, 20), ty(metadata.TimestampLTZ, 9)},
			[]Datum{{B: []byte{0x00, 0x01, 0x00}}, {I: 1000, Nanos: 5}},
			"0000000000000000" + "0200000018000000" + "0500000028000000" + "0100" + strings.Repeat("00", 14) + "e803000000000000"},
	} {
		got, err := EncodePaimonKey([]byte{0xaa}, c.types, c.vals)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got[0] != 0xaa {
			t.Fatalf("%s: dst prefix overwritten", c.name)
		}
		if h := hex.EncodeToString(got[1:]); h != c.want {
			t.Fatalf("%s:\n got %s\nwant %s", c.name, h, c.want)
		}
	}
	if _, err := EncodePaimonKey(nil, []metadata.DataType{{Root: metadata.Int}}, []Datum{NullDatum}); err == nil {
		t.Fatal("NULL key accepted")
	}
	if _, err := EncodePaimonKey(nil, []metadata.DataType{{Root: metadata.Array}}, []Datum{{}}); err == nil {
		t.Fatal("ARRAY key accepted")
	}
	wide := append([]byte{0x7f}, make([]byte, 16)...) // 17 bytes: more than the 16 Java reserves
	_, err := EncodePaimonKey(nil, []metadata.DataType{ty(metadata.Int, 0), ty(metadata.Decimal, 38)}, []Datum{{I: 1}, {B: wide}})
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "key column 1: decimal of 17 bytes") {
		t.Fatalf("17-byte decimal key: %v", err)
	}
}
