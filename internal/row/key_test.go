package row

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

func TestEncodeKeyVectors(t *testing.T) {
	intT := []metadata.DataType{notNull(ty(metadata.Int))}
	cases := []struct {
		types []metadata.DataType
		vals  []Datum
		want  string
	}{
		{intT, []Datum{di(1)}, "01"},
		{intT, []Datum{di(128)}, "8001"},
		{intT, []Datum{di(-1)}, "ffffffff0f"},
		{[]metadata.DataType{ty(metadata.String)}, []Datum{ds("a")}, "0161"},
		{[]metadata.DataType{ty(metadata.Int), ty(metadata.String)}, []Datum{di(7), ds("ab")}, "07026162"},
		{javaKeyTypes, javaKeyVals, javaKeyHex},
	}
	for _, c := range cases {
		want := unhex(t, c.want)
		got, err := EncodeKey(nil, c.types, c.vals)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("EncodeKey(%v) = %x, %v; want %x", c.vals, got, err, want)
			continue
		}
		dec, err := DecodeKey(c.types, want, nil)
		if err != nil || !datumsEqual(dec, c.vals) {
			t.Errorf("DecodeKey(%x) = %v, %v", want, dec, err)
		}
	}
}

func TestKeyErrors(t *testing.T) {
	types := []metadata.DataType{ty(metadata.Int), ty(metadata.String)}
	if _, err := EncodeKey(nil, types, []Datum{di(1), dnull()}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("NULL key column: %v", err)
	}
	for _, h := range []string{"", "01", "01 0261", "01 0161 00"} {
		if _, err := DecodeKey(types, unhex(t, h), nil); err == nil {
			t.Errorf("DecodeKey(%s) accepted", h)
		}
	}
}

func TestKeyPrefix(t *testing.T) {
	// PK (tenant STRING, id BIGINT, sub INT); bucket key = tenant.
	types := []metadata.DataType{ty(metadata.String), ty(metadata.BigInt), ty(metadata.Int)}
	key, err := EncodeKey(nil, types, []Datum{ds("acme"), di(300), di(-1)})
	if err != nil {
		t.Fatal(err)
	}
	prefix, err := EncodeKey(nil, types[:1], []Datum{ds("acme")})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []int{0, 5, 7, 12} {
		n, err := KeyPrefixLen(types, key, k)
		if err != nil || n != want {
			t.Errorf("KeyPrefixLen(k=%d) = %d, %v; want %d", k, n, err, want)
		}
	}
	if n, _ := KeyPrefixLen(types, key, 1); !bytes.Equal(key[:n], prefix) {
		t.Error("bucket-key prefix of the PK differs from the encoded bucket key")
	}
	if !HasKeyPrefix(key, prefix) {
		t.Error("HasKeyPrefix = false")
	}
	// Self-delimiting encodings: "acm" is not a prefix match of "acme" keys.
	other, _ := EncodeKey(nil, types[:1], []Datum{ds("acm")})
	if HasKeyPrefix(key, other) {
		t.Error(`"acm" prefix matches an "acme" key`)
	}
	if _, err := KeyPrefixLen(types, key, 4); err == nil {
		t.Error("k > len(types) accepted")
	}
	if _, err := KeyPrefixLen(types, key[:3], 1); err == nil {
		t.Error("truncated key accepted")
	}
}

func TestPrefixUpperBound(t *testing.T) {
	cases := []struct{ in, want string }{
		{"0461", "0462"}, {"01ff", "02"}, {"ffff", ""}, {"", ""}, {"00", "01"},
	}
	for _, c := range cases {
		got := PrefixUpperBound(nil, unhex(t, c.in))
		if want := unhex(t, c.want); !bytes.Equal(got, want) || (c.want == "") != (got == nil) {
			t.Errorf("PrefixUpperBound(%s) = %x, want %s", c.in, got, c.want)
		}
	}
}

func TestPrimaryKeyEncoding(t *testing.T) {
	cases := []struct {
		version    int
		lake       string
		defaultBK  bool
		want       KeyEncoding
		wantBucket KeyEncoding
	}{
		{0, LakeNone, false, KeyCompacted, KeyCompacted},
		{2, LakeNone, false, KeyCompacted, KeyCompacted},
		{1, LakePaimon, false, KeyPaimon, KeyPaimon},
		{2, LakePaimon, false, KeyCompacted, KeyPaimon},
		{2, LakePaimon, true, KeyPaimon, KeyPaimon},
		{1, LakeIceberg, true, KeyIceberg, KeyIceberg},
		{2, LakeIceberg, false, KeyCompacted, KeyIceberg},
		{1, LakeLance, false, KeyCompacted, KeyCompacted},
		{1, LakeHudi, true, KeyCompacted, KeyHudi},
	}
	for _, c := range cases {
		got, err := PrimaryKeyEncoding(c.version, c.lake, c.defaultBK)
		if err != nil || got != c.want {
			t.Errorf("PrimaryKeyEncoding(%d,%q,%v) = %v, %v; want %v", c.version, c.lake, c.defaultBK, got, err, c.want)
		}
		if got, _ := BucketKeyEncoding(c.lake); got != c.wantBucket {
			t.Errorf("BucketKeyEncoding(%q) = %v, want %v", c.lake, got, c.wantBucket)
		}
	}
	if _, err := PrimaryKeyEncoding(3, LakeNone, false); err == nil {
		t.Error("version 3 accepted")
	}
	if _, err := PrimaryKeyEncoding(1, "delta", false); err == nil {
		t.Error("unknown lake accepted")
	}
}

func TestValue(t *testing.T) {
	row := unhex(t, "00 01 05 616c696365 1e")
	v := AppendValue(nil, 1, row)
	if want := append(unhex(t, "0100"), row...); !bytes.Equal(v, want) {
		t.Fatalf("AppendValue = %x", v)
	}
	id, r, err := SplitValue(v)
	if err != nil || id != 1 || !bytes.Equal(r, row) {
		t.Fatalf("SplitValue = %d, %x, %v", id, r, err)
	}
	if id, _, _ := SplitValue(AppendValue(nil, -2, nil)); id != -2 {
		t.Fatalf("negative schema id = %d", id)
	}
	if _, _, err := SplitValue([]byte{1}); err == nil {
		t.Fatal("1-byte value accepted")
	}
}
