package row

import (
	"bytes"
	"math"
	"testing"
)

func TestVarint32(t *testing.T) {
	cases := []struct {
		v    int32
		want string
	}{
		{0, "00"}, {1, "01"}, {127, "7f"}, {128, "8001"}, {1000, "e807"}, {19655, "c79901"},
		{34200000, "c0b3a710"}, {-1, "ffffffff0f"}, {math.MinInt32, "8080808008"},
		{math.MaxInt32, "ffffffff07"},
	}
	for _, c := range cases {
		got := appendVarint32(nil, c.v)
		if want := unhex(t, c.want); !bytes.Equal(got, want) {
			t.Errorf("appendVarint32(%d) = %x, want %x", c.v, got, want)
		}
		if varint32Len(c.v) != len(got) {
			t.Errorf("varint32Len(%d) = %d, want %d", c.v, varint32Len(c.v), len(got))
		}
		v, next, ok := readVarint32(got, 0)
		if !ok || v != c.v || next != len(got) {
			t.Errorf("readVarint32(%x) = %d,%d,%v", got, v, next, ok)
		}
	}
}

func TestVarint64(t *testing.T) {
	cases := []struct {
		v    int64
		want string
	}{
		{0, "00"}, {30, "1e"}, {1698235273182, "de9fd7b5b631"},
		{-6101065172474983726, "d295fcd8ceb1aaaaab01"}, {-1, "ffffffffffffffffff01"},
		{math.MaxInt64, "ffffffffffffffff7f"},
	}
	for _, c := range cases {
		got := appendVarint64(nil, c.v)
		if want := unhex(t, c.want); !bytes.Equal(got, want) {
			t.Errorf("appendVarint64(%d) = %x, want %x", c.v, got, want)
		}
		v, next, ok := readVarint64(got, 0)
		if !ok || v != c.v || next != len(got) {
			t.Errorf("readVarint64(%x) = %d,%d,%v", got, v, next, ok)
		}
	}
}

func TestVarintMalformed(t *testing.T) {
	if _, _, ok := readVarint32(unhex(t, "8080"), 0); ok {
		t.Error("truncated varint32 accepted")
	}
	// Java's readInt stops after 5 bytes whatever the 5th byte's high bit says.
	if v, n, ok := readVarint32(unhex(t, "ffffffffff"), 0); !ok || n != 5 || v != -1 {
		t.Errorf("5-byte varint32 = %d,%d,%v", v, n, ok)
	}
	if _, _, ok := readVarint64(unhex(t, "ffffffffffffffffff81"), 0); ok {
		t.Error("11-byte varint64 accepted")
	}
	if _, _, ok := readVarint64(nil, 0); ok {
		t.Error("empty varint64 accepted")
	}
}
