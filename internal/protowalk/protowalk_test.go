package protowalk

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestNextReadsEachWireType(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 300)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("abc"))
	b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 7)
	var got []Field
	for len(b) > 0 {
		f, n, err := Next(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f)
		b = b[n:]
	}
	if len(got) != 3 || !got[0].Is(1, protowire.VarintType) || got[0].Varint != 300 ||
		!got[1].Is(2, protowire.BytesType) || string(got[1].Bytes) != "abc" ||
		!got[2].Is(3, protowire.Fixed64Type) {
		t.Fatalf("fields %+v", got)
	}
}

func TestNextRefusesWhatUnmarshalRefuses(t *testing.T) {
	big := protowire.AppendTag(nil, protowire.MaxValidNumber+1, protowire.VarintType)
	big = protowire.AppendVarint(big, 1)
	if _, _, err := Next(big); !errors.Is(err, ErrFieldNumber) {
		t.Fatalf("field number above the maximum: %v", err)
	}
	truncated := protowire.AppendTag(nil, 2, protowire.BytesType)
	truncated = protowire.AppendVarint(truncated, 10)
	truncated = append(truncated, "short"...)
	if _, _, err := Next(truncated); err == nil {
		t.Fatal("a truncated bytes value was accepted")
	}
	if _, _, err := Next([]byte{0x80}); err == nil {
		t.Fatal("a truncated tag was accepted")
	}
}
