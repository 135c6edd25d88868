package row

import (
	"testing"
)

const (
	uuidKey = "2bb87d68-baf9-4e64-90f9-f80910419fa6"
	foxKey  = "The quick brown fox jumps over the lazy dog"
)

// Vectors from docs/encodings.md §10.3 (Java BucketingFunctionTest, fluss-rust murmur_hash tests).
func TestBucketingVectors(t *testing.T) {
	cases := []struct {
		key                    []byte
		n                      int32
		fluss, paimon, iceberg int32
	}{
		{[]byte{0x00, 0x0a}, 7, 1, 1, 3},
		{[]byte{0x00, 0x0a, 0x0a, 0x0a}, 12, 0, 11, 4},
		{[]byte(uuidKey), 16, 6, 12, 12},
		{[]byte(foxKey), 8, 6, 0, 3},
	}
	for _, c := range cases {
		check := func(name string, f BucketingFunction, want int32) {
			got, err := f(c.key, c.n)
			if err != nil || got != want {
				t.Errorf("%s(%q, %d) = %d, %v; want %d", name, c.key, c.n, got, err, want)
			}
		}
		check("BucketFluss", BucketFluss, c.fluss)
		check("BucketFlussRust", BucketFlussRust, c.fluss) // no tail byte >= 0x80
		check("BucketPaimon", BucketPaimon, c.paimon)
		check("BucketIceberg", BucketIceberg, c.iceberg)
	}
}

func TestHashVectors(t *testing.T) {
	if got := FlussHash([]byte(foxKey), 42); got != 0x1bc6f880 {
		t.Errorf("FlussHash(fox, 42) = %#x", got)
	}
	if got := FlussHash([]byte(foxKey), 0); got != 0x5fd20a20 {
		t.Errorf("FlussHash(fox, 0) = %#x", got)
	}
	if got := FlussHash(nil, 42); got != 0x087fcd5c {
		t.Errorf("FlussHash(empty) = %#x", got)
	}
	for _, c := range []struct{ in, want int32 }{{0, 0x2362f9de}, {42, 0x43a46e1d}, {-77, 0x2eeb27de}} {
		if got := MurmurInt(c.in); got != c.want {
			t.Errorf("MurmurInt(%d) = %#x, want %#x", c.in, got, c.want)
		}
	}
	// Iceberg spec: murmur3 of the long 34 (8 bytes LE) and of "iceberg".
	if got := int32(Murmur3([]byte{34, 0, 0, 0, 0, 0, 0, 0}, 0)); got != 2017239379 {
		t.Errorf("Murmur3(34L) = %d", got)
	}
	if got := int32(Murmur3([]byte("iceberg"), 0)); got != 1210000089 {
		t.Errorf("Murmur3(iceberg) = %d", got)
	}
}

// TestBucketIntKeys covers §5.4's worked examples (PK id INT, compacted key), including the
// keys where Java sign-extends and Rust zero-extends a tail byte >= 0x80.
func TestBucketIntKeys(t *testing.T) {
	cases := []struct {
		id         int32
		java, rust [3]int32 // n = 3, 4, 16
	}{
		{id: 0, java: [3]int32{2, 0, 8}, rust: [3]int32{2, 0, 8}},
		{id: 1, java: [3]int32{0, 0, 12}, rust: [3]int32{0, 0, 12}},
		{id: 2, java: [3]int32{0, 2, 10}, rust: [3]int32{0, 2, 10}},
		{id: 42, java: [3]int32{2, 2, 10}, rust: [3]int32{2, 2, 10}},
		{id: 128, java: [3]int32{1, 2, 2}, rust: [3]int32{0, 3, 7}},
		{id: 1000, java: [3]int32{2, 3, 3}, rust: [3]int32{0, 1, 9}},
	}
	for _, c := range cases {
		key := appendVarint32(nil, c.id)
		for i, n := range []int32{3, 4, 16} {
			if got, _ := BucketFluss(key, n); got != c.java[i] {
				t.Errorf("Java bucket(id=%d, n=%d) = %d, want %d", c.id, n, got, c.java[i])
			}
			if got, _ := BucketFlussRust(key, n); got != c.rust[i] {
				t.Errorf("Rust bucket(id=%d, n=%d) = %d, want %d", c.id, n, got, c.rust[i])
			}
		}
	}
	key := unhex(t, "07026162") // (7, "ab")
	if got, _ := BucketFluss(key, 3); got != 0 {
		t.Errorf("(7,ab) n=3 = %d", got)
	}
	if got, _ := BucketFluss(key, 8); got != 6 {
		t.Errorf("(7,ab) n=8 = %d", got)
	}
	paimonKey := unhex(t, "0000000000000000 2a00000000000000") // Paimon BinaryRow(INT 42)
	if got, _ := BucketPaimon(paimonKey, 4); got != 1 {
		t.Errorf("paimon key(42) n=4 = %d", got)
	}
	if got, _ := BucketIceberg(unhex(t, "2a00000000000000"), 4); got != 2 {
		t.Errorf("iceberg key(42) n=4 = %d", got)
	}
}

func TestBucketingErrors(t *testing.T) {
	for _, f := range []BucketingFunction{BucketFluss, BucketFlussRust, BucketPaimon, BucketIceberg} {
		if _, err := f(nil, 3); err == nil {
			t.Error("empty key accepted")
		}
		if _, err := f([]byte{1}, 0); err == nil {
			t.Error("zero buckets accepted")
		}
	}
	if got, err := BucketHudi([]byte{0x80, 0, 0, 5}, 4); err != nil || got != 1 {
		t.Errorf("BucketHudi = %d, %v", got, err)
	}
	if _, err := BucketHudi([]byte{1, 2, 3}, 4); err == nil {
		t.Error("3-byte hudi key accepted")
	}
	for lake, want := range map[string]int32{"": 1, "lance": 1, "paimon": 1, "iceberg": 3} {
		f, err := BucketingFor(lake)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := f([]byte{0x00, 0x0a}, 7); got != want {
			t.Errorf("BucketingFor(%q) = %d, want %d", lake, got, want)
		}
	}
	if _, err := BucketingFor("delta"); err == nil {
		t.Error("unknown lake accepted")
	}
}
