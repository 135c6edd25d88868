package kvstore

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// compositeTable: PK (region STRING, user INT, event INT), bucket key (region, user).
func compositeTable() Table {
	s := metadata.Schema{
		Columns: []metadata.Column{
			{Name: "region", Type: metadata.DataType{Root: metadata.String, NotNull: true}},
			{Name: "user", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
			{Name: "v", Type: metadata.DataType{Root: metadata.String}},
			{Name: "event", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
		},
		PrimaryKey: []string{"region", "user", "event"},
	}
	return Table{ID: 7, SchemaID: 1, Schema: s, Config: metadata.TableConfig{LogFormat: metadata.LogFormatArrow}}
}

func cRec(region string, user, event int64, v string) rec {
	return rec{
		key: []row.Datum{{B: []byte(region)}, {I: user}, {I: event}},
		row: []row.Datum{{B: []byte(region)}, {I: user}, {B: []byte(v)}, {I: event}},
	}
}

func TestLookupPrefixAndLimitScan(t *testing.T) {
	h := newHarness(t, compositeTable())
	h.put(nil, cRec("US", 1, 1, "a"), cRec("US", 1, 2, "b"), cRec("US", 12, 1, "c"), cRec("EU", 2, 1, "d"))
	c := h.tab.tbl
	key := func(region string, user, event int64) []byte {
		k, err := row.EncodeKey(nil, c.keyTypes, []row.Datum{{B: []byte(region)}, {I: user}, {I: event}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	prefix := func(region string, user int64) []byte {
		k := key(region, user, 0)
		n, err := row.KeyPrefixLen(c.keyTypes, k, 2)
		if err != nil {
			t.Fatal(err)
		}
		return k[:n]
	}
	vals, err := h.tab.Lookup([][]byte{key("US", 1, 2), key("APAC", 9, 9), key("EU", 2, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 3 || vals[1] != nil || vals[0] == nil || vals[2] == nil {
		t.Fatalf("lookup answers %q", vals)
	}
	// Stored values are [int16 LE schema id][row] with the client's row bytes verbatim.
	wantRow, _ := row.AppendCompactedRow(nil, c.types, cRec("US", 1, 2, "b").row)
	if !bytes.Equal(vals[0], row.AppendValue(nil, 1, wantRow)) {
		t.Fatalf("value % x", vals[0])
	}
	lists, err := h.tab.PrefixLookup([][]byte{prefix("US", 1), prefix("APAC", 999), prefix("EU", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(lists) != 3 || len(lists[0]) != 2 || len(lists[1]) != 0 || len(lists[2]) != 1 {
		t.Fatalf("prefix lookup list sizes %d/%d/%d", len(lists[0]), len(lists[1]), len(lists[2]))
	}
	// US/1 must not match US/12: the prefix is the encoded (region, user), not a string prefix.
	for _, v := range lists[0] {
		if bytes.Contains(v, []byte("c")) {
			t.Fatalf("US/12 matched the US/1 prefix")
		}
	}

	batch, err := h.tab.LimitScan(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := int(binary.LittleEndian.Uint32(batch)); got != len(batch)-4 {
		t.Fatalf("length field %d for %d bytes", got, len(batch))
	}
	if batch[4] != 0 || binary.LittleEndian.Uint32(batch[5:]) != 3 {
		t.Fatalf("header % x", batch[:9])
	}
	n, rest := 0, batch[9:]
	for len(rest) > 0 {
		l := int(binary.LittleEndian.Uint32(rest))
		if l < 2 || l > len(rest)-4 || int16(binary.LittleEndian.Uint16(rest[4:])) != 1 {
			t.Fatalf("record %d malformed", n)
		}
		rest = rest[4+l:]
		n++
	}
	if n != 3 {
		t.Fatalf("%d records", n)
	}
	empty, _ := newHarness(t, compositeTable()).tab.LimitScan(nil, 10)
	if !bytes.Equal(empty, []byte{5, 0, 0, 0, 0, 0, 0, 0, 0}) {
		t.Fatalf("empty batch % x", empty)
	}
}
