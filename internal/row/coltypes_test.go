package row

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/stromdb/strom/internal/metadata"
)

// TestTypeCodecs runs testdata/coltypes: one case per Fluss type (and per precision class
// where the layout changes), each showing a value's bytes in every layout the row package
// writes and reading them back. A new type gets its entry in typeCodecs and its cases here.
//
//	encode
//	<the type as Fluss JSON>
//	<a value: null, or Datum members i=, f=, s= (UTF-8), x= (hex bytes), nanos=, separated by
//	 spaces; nested values are not covered here, see compacted_test.go>
//	----
//	compacted <hex of a one-field CompactedRow>
//	indexed   <hex of a one-field IndexedRow>
//	array     <hex of a one-element BinaryArray>
//	iceberg   <hex of the Iceberg bucket key, or the refusal>
//	paimon    <hex of the Paimon BinaryRow key, or the error>
//	decoded   <the value read back from each layout; one line if all three agree>
//
// Run with -rewrite to regenerate the expected output after a deliberate change.
func TestTypeCodecs(t *testing.T) {
	datadriven.RunTest(t, "testdata/coltypes", func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd != "encode" {
			td.Fatalf(t, "unknown command %q", td.Cmd)
		}
		lines := strings.SplitN(td.Input, "\n", 2)
		if len(lines) != 2 {
			td.Fatalf(t, "want a type line and a value line")
		}
		typ, err := metadata.ParseDataType([]byte(lines[0]))
		if err != nil {
			td.Fatalf(t, "type: %v", err)
		}
		d, err := parseTestDatum(lines[1])
		if err != nil {
			td.Fatalf(t, "value: %v", err)
		}
		types := []metadata.DataType{typ}
		var out strings.Builder
		var decoded []string
		emit := func(name string, b []byte, err error, decode func([]byte) (Datum, error)) {
			if err != nil {
				fmt.Fprintf(&out, "%-9s error: %v\n", name, err)
				return
			}
			fmt.Fprintf(&out, "%-9s %s\n", name, hex.EncodeToString(b))
			got, err := decode(b)
			if err != nil {
				decoded = append(decoded, name+": error: "+err.Error())
				return
			}
			decoded = append(decoded, formatTestDatum(got))
		}
		b, err := AppendCompactedRow(nil, types, []Datum{d})
		emit("compacted", b, err, func(b []byte) (Datum, error) {
			r, err := DecodeCompactedRow(types, b, nil)
			if err != nil {
				return Datum{}, err
			}
			return r[0], nil
		})
		b, err = AppendIndexedRow(nil, types, []Datum{d})
		emit("indexed", b, err, func(b []byte) (Datum, error) {
			r, err := DecodeIndexedRow(types, b, nil)
			if err != nil {
				return Datum{}, err
			}
			return r[0], nil
		})
		b, err = appendBinaryArray(nil, &typ, []Datum{d}, formatCompacted)
		emit("array", b, err, func(b []byte) (Datum, error) {
			r, err := decodeBinaryArray(b, &typ, formatCompacted, nil)
			if err != nil {
				return Datum{}, err
			}
			return r[0], nil
		})
		if d.Null {
			fmt.Fprintf(&out, "%-9s -\n", "iceberg")
		} else if b, err := EncodeIcebergKey(nil, types, []Datum{d}); err != nil {
			fmt.Fprintf(&out, "%-9s refused\n", "iceberg")
		} else {
			fmt.Fprintf(&out, "%-9s %s\n", "iceberg", hex.EncodeToString(b))
		}
		if d.Null {
			fmt.Fprintf(&out, "%-9s -\n", "paimon")
		} else if b, err := EncodePaimonKey(nil, types, []Datum{d}); err != nil {
			fmt.Fprintf(&out, "%-9s error: %v\n", "paimon", err)
		} else {
			fmt.Fprintf(&out, "%-9s %s\n", "paimon", hex.EncodeToString(b))
		}
		if len(decoded) > 1 {
			same := true
			for _, s := range decoded[1:] {
				same = same && s == decoded[0]
			}
			if same {
				decoded = decoded[:1]
			}
		}
		for _, s := range decoded {
			fmt.Fprintf(&out, "decoded   %s\n", s)
		}
		return out.String()
	})
}

func parseTestDatum(s string) (Datum, error) {
	s = strings.TrimSpace(s)
	if s == "null" {
		return NullDatum, nil
	}
	var d Datum
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return d, fmt.Errorf("%q is not key=value", f)
		}
		var err error
		switch k {
		case "i":
			d.I, err = strconv.ParseInt(v, 10, 64)
		case "f":
			d.F, err = strconv.ParseFloat(v, 64)
		case "s":
			d.B = []byte(v)
		case "x":
			d.B, err = hex.DecodeString(v)
		case "nanos":
			var n int64
			n, err = strconv.ParseInt(v, 10, 32)
			d.Nanos = int32(n)
		default:
			return d, fmt.Errorf("unknown member %q", k)
		}
		if err != nil {
			return d, fmt.Errorf("%s: %w", k, err)
		}
	}
	return d, nil
}

func formatTestDatum(d Datum) string {
	if d.Null {
		return "null"
	}
	var parts []string
	if d.I != 0 {
		parts = append(parts, "i="+strconv.FormatInt(d.I, 10))
	}
	if d.F != 0 {
		parts = append(parts, "f="+strconv.FormatFloat(d.F, 'g', -1, 64))
	}
	if d.B != nil {
		parts = append(parts, "x="+hex.EncodeToString(d.B))
	}
	if d.Nanos != 0 {
		parts = append(parts, "nanos="+strconv.Itoa(int(d.Nanos)))
	}
	if len(parts) == 0 {
		return "zero"
	}
	return strings.Join(parts, " ")
}
