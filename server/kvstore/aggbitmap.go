package kvstore

import (
	"github.com/RoaringBitmap/roaring/v2"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/row"
)

// rbm32 is the union of two 32-bit Roaring bitmaps stored in a BYTES column (Java
// FieldRoaringBitmap32Agg). Both sides and the result are in RoaringBitmap's portable
// serialization (the format Java's RoaringBitmap.serialize, CRoaring's portable functions and
// this library's ToBytes share: github.com/RoaringBitmap/RoaringFormatSpec); the result is
// run-optimized first, as Java does, so a stored value is what Fluss would store. A NULL on
// either side yields the other side unchanged.
func rbm32(acc, in row.Datum) (out row.Datum, err error) {
	defer func() {
		// The library is not trusted never to panic on hostile input it accepted.
		if r := recover(); r != nil {
			out, err = row.Datum{}, ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: %v", r)
		}
	}()
	if acc.Null || in.Null {
		if acc.Null {
			return in, nil
		}
		return acc, nil
	}
	a, err := readBitmap32(acc.B)
	if err != nil {
		return row.Datum{}, err
	}
	b, err := readBitmap32(in.B)
	if err != nil {
		return row.Datum{}, err
	}
	a.Or(b)
	a.RunOptimize()
	b32, err := a.ToBytes()
	if err != nil {
		return row.Datum{}, ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: %v", err)
	}
	return row.Datum{B: b32}, nil
}

// readBitmap32 decodes a portable 32-bit Roaring bitmap and checks that it is well formed
// (sorted, distinct values in containers of the right kinds). Bytes that are not one fail as
// in Java (a RuntimeException there: UNKNOWN_SERVER_ERROR); bytes after the bitmap are
// ignored, as Java's deserialize(ByteBuffer) ignores them.
func readBitmap32(b []byte) (*roaring.Bitmap, error) {
	bm := roaring.New()
	_, err := bm.FromUnsafeBytes(b)
	if err == nil {
		// The decoder checks the framing, not the content: unsorted or repeated values
		// would break the union (FuzzRbm32 found a panic in RunOptimize).
		err = bm.Validate()
	}
	if err != nil {
		return nil, ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: %v", err)
	}
	return bm, nil
}
