package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stromdb/strom/internal/ferr"
)

// A produced batch's records are decompressed with a bound fixed before decompressing
// starts (docs/kafka.md, "Bad input"): gzip and lz4 stream through a reader that stops one
// byte past the bound; snappy blocks declare their decoded length, checked before a block is
// decoded; zstd streams through a bounded reader too, with a decoder that refuses a frame
// whose window exceeds the limit (or 8 MiB, zstd's usual window, if larger). So a small
// request never makes the server hold more than about the limit for one batch, however much
// its payload claims to expand. Output beyond the bound is MESSAGE_TOO_LARGE; a stream that
// does not decode is CORRUPT_MESSAGE (errCorrupt).

// maxDecompressed is the most one batch may decompress to, whatever the frame limit.
const maxDecompressed = 64 << 20

// decompressor decompresses record batches up to limit bytes each. It is safe for
// concurrent use.
type decompressor struct {
	limit int

	zstd sync.Pool // *zstdReader
}

// newDecompressor bounds each batch at the request frame limit, and at most maxDecompressed.
func newDecompressor(frameLimit int) *decompressor {
	limit := maxDecompressed
	if frameLimit > 0 && frameLimit < limit {
		limit = frameLimit
	}
	return &decompressor{limit: limit}
}

// errTooLarge is the error of a batch whose records decompress to more than limit bytes.
func errTooLarge(limit int) error {
	return ferr.New(ferr.RecordTooLargeException, "record batch decompresses to more than %d bytes", limit)
}

// decompress returns the records of a batch compressed with codec.
func (d *decompressor) decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	var out []byte
	var err error
	switch codec {
	case kgo.CodecNone:
		return src, nil
	case kgo.CodecGzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = d.readBounded(zr, len(src))
		}
	case kgo.CodecSnappy:
		out, err = d.snappy(src)
	case kgo.CodecLz4:
		out, err = d.readBounded(lz4.NewReader(bytes.NewReader(src)), len(src))
	case kgo.CodecZstd:
		out, err = d.zstdDecode(src)
	default:
		return nil, fmt.Errorf("%w: compression codec %d", errCorrupt, codec)
	}
	if err != nil && ferr.CodeOf(err) != ferr.RecordTooLargeException {
		return nil, fmt.Errorf("%w: decompress %s: %w", errCorrupt, codecName(codec), err)
	}
	return out, err
}

// readBounded reads r to its end, refusing more than d.limit bytes; the buffer starts at a
// guess from the compressed size so a typical batch is not copied while it grows.
func (d *decompressor) readBounded(r io.Reader, compressed int) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(d.limit+1, 4*compressed+512)))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(d.limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(d.limit) {
		return nil, errTooLarge(d.limit)
	}
	return buf.Bytes(), nil
}

// xerialMagic starts the framing of snappy that the Java producer writes: the magic, two
// int32 versions, then blocks of a big-endian int32 length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// snappy decodes a raw snappy block or xerial-framed blocks, checking each block's declared
// length against what the limit leaves before decoding it.
func (d *decompressor) snappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > d.limit {
			return nil, errTooLarge(d.limit)
		}
		return s2.Decode(nil, src)
	}
	if len(src) < xerialHeaderLen {
		return nil, errors.New("truncated xerial header")
	}
	src = src[xerialHeaderLen:]
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("truncated xerial block length")
		}
		size := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(size) > uint64(len(src)) {
			return nil, fmt.Errorf("xerial block of %d bytes with %d left", size, len(src))
		}
		block := src[:size]
		src = src[size:]
		n, err := s2.DecodedLen(block)
		if err != nil {
			return nil, err
		}
		if n > d.limit-len(out) {
			return nil, errTooLarge(d.limit)
		}
		start := len(out)
		out = append(out, make([]byte, n)...)
		if _, err := s2.Decode(out[start:], block); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// zstdWindow is the least window the zstd decoder accepts: streaming encoders (the zstd
// CLI's levels, klauspost's) use windows up to 8 MiB even for small inputs. A larger limit
// allows windows up to the limit.
const zstdWindow = 8 << 20

// zstdReader is a pooled synchronous zstd stream decoder; its finalizer releases the
// decoder when the pool drops it.
type zstdReader struct{ dec *zstd.Decoder }

// zstdDecode streams every frame of src through a pooled decoder into readBounded, so the
// output stops one byte past the limit however much the frames claim.
func (d *decompressor) zstdDecode(src []byte) ([]byte, error) {
	zr, _ := d.zstd.Get().(*zstdReader)
	if zr == nil {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(uint64(max(d.limit, zstdWindow))))
		if err != nil {
			return nil, err
		}
		zr = &zstdReader{dec}
		runtime.SetFinalizer(zr, func(zr *zstdReader) { zr.dec.Close() })
	}
	defer d.zstd.Put(zr)
	if err := zr.dec.Reset(bytes.NewReader(src)); err != nil {
		return nil, err
	}
	out, err := d.readBounded(zr.dec, len(src))
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, errTooLarge(d.limit)
	}
	return out, err
}

func codecName(c kgo.CompressionCodecType) string {
	switch c {
	case kgo.CodecGzip:
		return "gzip"
	case kgo.CodecSnappy:
		return "snappy"
	case kgo.CodecLz4:
		return "lz4"
	case kgo.CodecZstd:
		return "zstd"
	}
	return "none"
}
