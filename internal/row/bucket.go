package row

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Bucketing (docs/encodings.md §10). The client computes the bucket id from the bucket-key bytes; the
// server never recomputes it. These functions let the Go client match Java byte for byte.

const (
	murmurC1 = 0xcc9e2d51
	murmurC2 = 0x1b873593
	// FlussHashSeed is the seed of Fluss's Murmur3 variant (MurmurHashUtils.DEFAULT_SEED).
	FlussHashSeed = 42
)

func mixK1(k uint32) uint32 {
	k *= murmurC1
	k = bits.RotateLeft32(k, 15)
	return k * murmurC2
}

func mixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// FlussHash is Java's MurmurHashUtils.hashBytes: Murmur3-32 over 4-byte little-endian words,
// but each of the len%4 tail bytes is sign-extended to 32 bits and mixed like a whole word.
func FlussHash(key []byte, seed uint32) uint32 {
	return flussHash(key, seed, true)
}

// FlussHashRust is the Rust client's fluss_hash_bytes: as FlussHash except that tail bytes are
// zero-extended. It differs from Java whenever a tail byte is >= 0x80.
func FlussHashRust(key []byte, seed uint32) uint32 {
	return flussHash(key, seed, false)
}

func flussHash(key []byte, seed uint32, signExtend bool) uint32 {
	h := seed
	n := len(key) &^ 3
	for i := 0; i < n; i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(key[i:])))
	}
	for _, b := range key[n:] {
		k := uint32(b)
		if signExtend {
			k = uint32(int32(int8(b)))
		}
		h = mixH1(h, mixK1(k))
	}
	return fmix32(h ^ uint32(len(key)))
}

// MurmurInt is Java's MathUtils.murmurHash: a one-word Murmur3 round of code, made
// non-negative (MinInt32 maps to 0).
func MurmurInt(code int32) int32 {
	h := mixH1(0, mixK1(uint32(code)))
	x := int32(fmix32(h ^ 4))
	switch {
	case x >= 0:
		return x
	case x != math.MinInt32:
		return -x
	}
	return 0
}

// Murmur3 is the standard Murmur3 x86 32-bit hash (Guava murmur3_32_fixed, tail bytes
// unsigned and mixed once), used by the Iceberg bucketing function.
func Murmur3(key []byte, seed uint32) uint32 {
	h := seed
	n := len(key) &^ 3
	for i := 0; i < n; i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(key[i:])))
	}
	var k uint32
	for i, b := range key[n:] {
		k |= uint32(b) << (8 * uint(i))
	}
	h ^= mixK1(k)
	return fmix32(h ^ uint32(len(key)))
}

// BucketingFunction maps bucket-key bytes to a bucket id in [0, numBuckets).
type BucketingFunction func(key []byte, numBuckets int32) (int32, error)

func checkBucketArgs(key []byte, numBuckets int32) error {
	if len(key) == 0 {
		return invalidf("bucket key must not be empty")
	}
	if numBuckets <= 0 {
		return invalidf("number of buckets %d must be positive", numBuckets)
	}
	return nil
}

// BucketFluss is Java's FlussBucketingFunction (no lake format, or lance).
func BucketFluss(key []byte, numBuckets int32) (int32, error) {
	if err := checkBucketArgs(key, numBuckets); err != nil {
		return 0, err
	}
	return MurmurInt(int32(FlussHash(key, FlussHashSeed))) % numBuckets, nil
}

// BucketFlussRust is the Rust client's (and so pyfluss's) default bucketing function, which
// differs from BucketFluss for keys whose tail bytes include one >= 0x80.
func BucketFlussRust(key []byte, numBuckets int32) (int32, error) {
	if err := checkBucketArgs(key, numBuckets); err != nil {
		return 0, err
	}
	return MurmurInt(int32(FlussHashRust(key, FlussHashSeed))) % numBuckets, nil
}

// BucketPaimon is Java's PaimonBucketingFunction: |flussHash % n| with Java remainder sign.
func BucketPaimon(key []byte, numBuckets int32) (int32, error) {
	if err := checkBucketArgs(key, numBuckets); err != nil {
		return 0, err
	}
	r := int32(FlussHash(key, FlussHashSeed)) % numBuckets
	if r < 0 {
		r = -r
	}
	return r, nil
}

// BucketIceberg is Java's IcebergBucketingFunction: (murmur3(key, 0) & MaxInt32) % n.
func BucketIceberg(key []byte, numBuckets int32) (int32, error) {
	if err := checkBucketArgs(key, numBuckets); err != nil {
		return 0, err
	}
	return int32(Murmur3(key, 0)&math.MaxInt32) % numBuckets, nil
}

// BucketHudi is Java's HudiBucketingFunction: the key is a 4-byte big-endian hash.
func BucketHudi(key []byte, numBuckets int32) (int32, error) {
	if numBuckets <= 0 {
		return 0, invalidf("number of buckets %d must be positive", numBuckets)
	}
	if len(key) != 4 {
		return 0, invalidf("hudi bucket key must have exactly 4 bytes, has %d", len(key))
	}
	return int32(binary.BigEndian.Uint32(key)&math.MaxInt32) % numBuckets, nil
}

// BucketingFor returns the Java bucketing function for a table.datalake.format value ("" for
// none).
func BucketingFor(lake string) (BucketingFunction, error) {
	switch lake {
	case LakeNone, LakeLance:
		return BucketFluss, nil
	case LakePaimon:
		return BucketPaimon, nil
	case LakeIceberg:
		return BucketIceberg, nil
	case LakeHudi:
		return BucketHudi, nil
	}
	return nil, invalidf("unsupported datalake format %q", lake)
}
