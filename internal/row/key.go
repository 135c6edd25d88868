package row

import (
	"bytes"
	"fmt"

	"github.com/stromdb/strom/internal/metadata"
)

// Compacted key encoding (docs/encodings.md §8, Java CompactedKeyEncoder/CompactedKeyWriter): the
// key columns' values back to back in their CompactedRow encodings, with no null bitset. NULL
// key values are rejected. Every value encoding is self-delimiting, so the encoding of the
// first k key columns is a byte prefix of the encoding of all of them, and a stored key starts
// with an encoded prefix exactly when its first k columns equal the prefix's columns. That is
// what PREFIX_LOOKUP relies on (Java RocksDBKv.prefixLookup: seek to the prefix, then take
// keys while they start with it).

// EncodeKey appends the compacted key encoding of vals (one per entry of types, the key columns
// in key order) to dst. A NULL value yields an error wrapping ErrInvalidValue.
func EncodeKey(dst []byte, types []metadata.DataType, vals []Datum) ([]byte, error) {
	if len(vals) != len(types) {
		return dst, invalidf("key has %d values for %d columns", len(vals), len(types))
	}
	start := len(dst)
	var err error
	for i := range types {
		if vals[i].Null {
			return dst[:start], invalidf("key column %d is NULL", i)
		}
		if dst, err = appendCompactedValue(dst, &types[i], &vals[i]); err != nil {
			return dst[:start], invalidf("key column %d: %v", i, err)
		}
	}
	return dst, nil
}

// DecodeKey decodes a compacted key into dst (one Datum per key column). Byte values alias
// key. The whole key must be consumed.
func DecodeKey(types []metadata.DataType, key []byte, dst []Datum) ([]Datum, error) {
	var r CompactedReader
	r.resetKey(types, key)
	dst = prepare(dst, len(types))
	for i := range dst {
		if err := r.Next(&dst[i]); err != nil {
			return dst[:0], fmt.Errorf("key: %w", err)
		}
	}
	if err := r.Done(); err != nil {
		return dst[:0], fmt.Errorf("key: %w", err)
	}
	return dst, nil
}

// KeyPrefixLen returns the length of the encoding of the first k columns of the compacted key
// key, whose columns have the given types (len(types) >= k; only the first k are used). The
// bucket-key bytes of a primary key whose bucket key is a strict prefix of the physical primary
// key (table.kv.format-version 2) are key[:KeyPrefixLen(pkTypes, key, len(bucketKeys))].
func KeyPrefixLen(types []metadata.DataType, key []byte, k int) (int, error) {
	if k < 0 || k > len(types) {
		return 0, invalidf("prefix of %d columns of a %d-column key", k, len(types))
	}
	pos := 0
	var err error
	for i := 0; i < k; i++ {
		if pos, err = skipCompactedValue(key, pos, &types[i]); err != nil {
			return 0, fmt.Errorf("key column %d: %w", i, err)
		}
	}
	return pos, nil
}

// HasKeyPrefix reports whether the stored key matches the prefix-lookup key prefix (a plain byte
// prefix test, exactly as Java's BytesUtils.prefixEquals).
func HasKeyPrefix(key, prefix []byte) bool { return bytes.HasPrefix(key, prefix) }

// PrefixUpperBound returns the smallest byte string greater than every string that starts with
// prefix, for use as an exclusive iterator upper bound, appended to dst[:0]. It returns nil when
// no such bound exists (prefix empty or all 0xff): iterate to the end and stop with
// HasKeyPrefix.
func PrefixUpperBound(dst, prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			dst = append(dst[:0], prefix[:i+1]...)
			dst[i]++
			return dst
		}
	}
	return nil
}

// KeyEncoding names a key byte format.
type KeyEncoding uint8

// Key encodings. KeyCompacted is EncodeKey, KeyPaimon EncodePaimonKey, KeyIceberg
// EncodeIcebergKey; KeyHudi (bucket keys only) is named so that callers can refuse it.
const (
	KeyCompacted KeyEncoding = iota + 1 // CompactedKeyEncoder (no lake, lance, hudi PKs)
	KeyPaimon                           // Paimon BinaryRow of the key columns
	KeyIceberg                          // Iceberg single-column encoding
	KeyHudi                             // 4-byte big-endian hash (bucket keys only)
)

// Lake formats as written in table.datalake.format (lower case). "" means none.
const (
	LakeNone    = ""
	LakePaimon  = "paimon"
	LakeIceberg = "iceberg"
	LakeLance   = "lance"
	LakeHudi    = "hudi"
)

// lakeKeyEncoding is Java's KeyEncoder.of(lakeFormat).
func lakeKeyEncoding(lake string) (KeyEncoding, error) {
	switch lake {
	case LakeNone, LakeLance:
		return KeyCompacted, nil
	case LakePaimon:
		return KeyPaimon, nil
	case LakeIceberg:
		return KeyIceberg, nil
	case LakeHudi:
		return KeyHudi, nil
	}
	return 0, invalidf("unsupported datalake format %q", lake)
}

// PrimaryKeyEncoding returns the encoding of primary-key bytes (KV record keys, lookup keys,
// prefix-lookup keys) as Java's KeyEncoder.ofPrimaryKeyEncoder chooses it. kvFormatVersion is
// table.kv.format-version (0 when absent, treated as 1); defaultBucketKey reports whether the
// bucket key equals the physical primary key.
//
// Without a lake format both versions use the compacted encoding, so for such tables v1 and v2
// keys are identical. They differ only for paimon/iceberg tables with a bucket key that is a
// strict prefix of the primary key: v1 uses the lake encoder (prefix lookup impossible), v2
// the compacted encoder (so the bucket-key bytes are a prefix of the key bytes).
func PrimaryKeyEncoding(kvFormatVersion int, lake string, defaultBucketKey bool) (KeyEncoding, error) {
	if lake == LakeHudi {
		return KeyCompacted, nil
	}
	switch kvFormatVersion {
	case 0, 1:
		return lakeKeyEncoding(lake)
	case 2:
		if defaultBucketKey {
			return lakeKeyEncoding(lake)
		}
		return KeyCompacted, nil
	}
	return 0, invalidf("unsupported kv format version %d", kvFormatVersion)
}

// BucketKeyEncoding returns the encoding of the bytes fed to the bucketing function (Java
// KeyEncoder.ofBucketKeyEncoder). When the bucket key equals the physical primary key and the
// lake format is not hudi, Java reuses the primary-key bytes instead, whose encoding
// PrimaryKeyEncoding gives (the same as this one in that case, since v2 then also uses the
// lake encoder).
func BucketKeyEncoding(lake string) (KeyEncoding, error) { return lakeKeyEncoding(lake) }
