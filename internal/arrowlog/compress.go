package arrowlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression is the Arrow body compression of a log table
// (table.log.arrow.compression.type).
type Compression uint8

// The codecs Fluss supports.
const (
	CompressionNone Compression = iota
	CompressionLZ4Frame
	CompressionZstd
)

// DefaultZstdLevel is Fluss's table.log.arrow.compression.zstd.level default.
const DefaultZstdLevel = 3

// ParseCompression maps a table property value (NONE, LZ4_FRAME, ZSTD) to a Compression.
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "NONE", "none":
		return CompressionNone, nil
	case "LZ4_FRAME", "lz4_frame":
		return CompressionLZ4Frame, nil
	case "ZSTD", "zstd":
		return CompressionZstd, nil
	}
	return 0, fmt.Errorf("arrowlog: unknown arrow compression type %q", s)
}

// String returns the Fluss property spelling.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "NONE"
	case CompressionLZ4Frame:
		return "LZ4_FRAME"
	case CompressionZstd:
		return "ZSTD"
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

func (c Compression) fbCodec() int8 {
	switch c {
	case CompressionLZ4Frame:
		return fbCodecLZ4Frame
	case CompressionZstd:
		return fbCodecZstd
	}
	return fbNoCodec
}

// MaxDecodedBufferSize bounds the declared uncompressed size of one Arrow buffer. Fluss
// batches are a few MiB; a larger claim is treated as corrupt rather than allocated.
const MaxDecodedBufferSize = 256 << 20

// lz4MaxRatio bounds how much an LZ4 frame can expand (the block format cannot exceed ~255:1),
// so the output buffer can be allocated up front without trusting the declared size.
const lz4MaxRatio = 256

// uncompressedMarker is the int64 length prefix meaning "buffer stored raw".
const uncompressedMarker = -1

var (
	zstdDecoderOnce sync.Once
	zstdDecoder     *zstd.Decoder
	zstdDecoderErr  error

	zstdEncoders sync.Map // zstd.EncoderLevel -> *zstd.Encoder (EncodeAll is concurrency-safe)

	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		// Independent 64 KiB blocks, no content checksum: the frame shape Fluss's Java
		// reader (FlussLZ4BlockInputStream) requires and arrow-go/C++ produce.
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false), lz4.ConcurrencyOption(1))
		return w
	}}
)

func getZstdDecoder() (*zstd.Decoder, error) {
	zstdDecoderOnce.Do(func() {
		zstdDecoder, zstdDecoderErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxDecodedBufferSize),
			zstd.WithDecoderMaxWindow(MaxDecodedBufferSize))
	})
	return zstdDecoder, zstdDecoderErr
}

func getZstdEncoder(level int) (*zstd.Encoder, error) {
	if level <= 0 {
		level = DefaultZstdLevel
	}
	l := zstd.EncoderLevelFromZstd(level)
	if e, ok := zstdEncoders.Load(l); ok {
		return e.(*zstd.Encoder), nil
	}
	// EncodeAll takes one of the encoder's internal states for the call: with one state,
	// concurrent callers (buckets of a PUT_KV staged at once, several connections) would
	// compress one at a time.
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, fmt.Errorf("arrowlog: zstd encoder: %w", err)
	}
	actual, _ := zstdEncoders.LoadOrStore(l, e)
	return actual.(*zstd.Encoder), nil
}

// appendCompressed appends the compressed form of one Arrow buffer to dst: an int64 LE
// uncompressed length followed by a codec frame, or -1 followed by the raw bytes when
// compression does not make the buffer smaller (as Arrow Java and arrow-rs do). An empty
// buffer stays empty.
func appendCompressed(dst, src []byte, c Compression, zstdLevel int) ([]byte, error) {
	if len(src) == 0 {
		return dst, nil
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(src)))
	switch c {
	case CompressionZstd:
		enc, err := getZstdEncoder(zstdLevel)
		if err != nil {
			return nil, err
		}
		dst = enc.EncodeAll(src, dst)
	case CompressionLZ4Frame:
		w := lz4Writers.Get().(*lz4.Writer)
		bw := appendWriter{b: dst}
		w.Reset(&bw)
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		w.Reset(nil)
		lz4Writers.Put(w)
		if err != nil {
			return nil, fmt.Errorf("arrowlog: lz4 compress: %w", err)
		}
		dst = bw.b
	default:
		return nil, fmt.Errorf("arrowlog: no codec for %v", c)
	}
	if len(dst)-start >= 8+len(src) {
		dst = binary.LittleEndian.AppendUint64(dst[:start], ^uint64(0))
		dst = append(dst, src...)
	}
	return dst, nil
}

// appendWriter is an io.Writer appending to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// decompressBuffer returns the uncompressed content of one compressed Arrow buffer. The
// result aliases src when the buffer is stored raw (-1 prefix); otherwise it is a new,
// 8-byte-aligned slice.
func decompressBuffer(src []byte, codec int8) ([]byte, error) {
	if len(src) == 0 {
		return nil, nil
	}
	if len(src) < 8 {
		return nil, corruptf("compressed buffer of %d bytes lacks its length prefix", len(src))
	}
	n := int64(binary.LittleEndian.Uint64(src))
	frame := src[8:]
	if n == uncompressedMarker {
		return frame, nil
	}
	if n < 0 || n > MaxDecodedBufferSize {
		return nil, corruptf("declared uncompressed buffer size %d out of range", n)
	}
	if n == 0 {
		return nil, nil
	}
	switch codec {
	case fbCodecZstd:
		dec, err := getZstdDecoder()
		if err != nil {
			return nil, fmt.Errorf("arrowlog: zstd decoder: %w", err)
		}
		// Allocate up front only for modest sizes; beyond that let the decoder grow the
		// output as it actually produces bytes, so a lying prefix cannot force a huge
		// allocation. Allocations of >=16 bytes are 8-byte aligned in Go.
		capHint := int(n)
		if capHint > 1<<20 {
			capHint = 1 << 20
		}
		out, err := dec.DecodeAll(frame, alignedBuf(capHint)[:0])
		if err != nil {
			return nil, corruptf("zstd: %v", err)
		}
		if int64(len(out)) != n {
			return nil, corruptf("zstd buffer decoded to %d bytes, expected %d", len(out), n)
		}
		return out, nil
	case fbCodecLZ4Frame:
		if n > int64(len(frame))*lz4MaxRatio+(64<<10) {
			return nil, corruptf("lz4 buffer claims %d bytes from a %d-byte frame", n, len(frame))
		}
		out := alignedBuf(int(n))
		r := lz4Readers.Get().(*lz4.Reader)
		br := bytes.NewReader(frame)
		r.Reset(br)
		_, err := io.ReadFull(r, out)
		if err == nil {
			// The frame must end exactly here.
			var one [1]byte
			if k, e := r.Read(one[:]); k != 0 || e != io.EOF {
				err = fmt.Errorf("frame longer than declared %d bytes", n)
			}
		}
		r.Reset(nil)
		lz4Readers.Put(r)
		if err != nil {
			return nil, corruptf("lz4: %v", err)
		}
		return out, nil
	}
	return nil, corruptf("unknown codec %d", codec)
}

// alignedBuf returns a slice of length n whose first byte is 8-byte aligned (Go's tiny
// allocator can return less-aligned memory for blocks under 16 bytes).
func alignedBuf(n int) []byte {
	if n < 16 {
		return make([]byte, 16)[:n]
	}
	return make([]byte, n)
}
