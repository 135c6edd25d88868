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
func rbm32(acc, in row.Datum) (row.Datum, error) {
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
	out, err := a.ToBytes()
	if err != nil {
		return row.Datum{}, ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: %v", err)
	}
	return row.Datum{B: out}, nil
}

// readBitmap32 decodes a portable 32-bit Roaring bitmap. Bytes that are not one fail as in
// Java (a RuntimeException there: UNKNOWN_SERVER_ERROR); bytes after the bitmap are ignored,
// as Java's deserialize(ByteBuffer) ignores them. The library's decoder is not trusted never
// to panic on hostile input, so a panic is an error too.
func readBitmap32(b []byte) (bm *roaring.Bitmap, err error) {
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: %v", r)
		}
	}()
	bm = roaring.New()
	if _, err := bm.FromUnsafeBytes(b); err != nil {
		return nil, ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: %v", err)
	}
	return bm, nil
}
