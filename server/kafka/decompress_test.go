package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// compressors builds a compressed payload of src per codec the way producers frame them
// (snappy both raw, as librdkafka and franz-go send it, and xerial-framed, as the Java
// producer does; zstd both with the content size in the frame header and streamed without).
var compressors = []struct {
	name  string
	codec kgo.CompressionCodecType
	make  func(t testing.TB, src []byte) []byte
}{
	{"gzip", kgo.CodecGzip, func(t testing.TB, src []byte) []byte {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		if _, err := w.Write(src); err != nil || w.Close() != nil {
			t.Fatal("gzip", err)
		}
		return b.Bytes()
	}},
	{"snappy", kgo.CodecSnappy, func(t testing.TB, src []byte) []byte { return s2.EncodeSnappy(nil, src) }},
	{"snappy-xerial", kgo.CodecSnappy, func(t testing.TB, src []byte) []byte {
		out := append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
		for len(src) > 0 {
			n := min(len(src), 1<<20)
			block := s2.EncodeSnappy(nil, src[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
			out = append(out, block...)
			src = src[n:]
		}
		return out
	}},
	{"lz4", kgo.CodecLz4, func(t testing.TB, src []byte) []byte {
		var b bytes.Buffer
		w := lz4.NewWriter(&b)
		if _, err := w.Write(src); err != nil || w.Close() != nil {
			t.Fatal("lz4", err)
		}
		return b.Bytes()
	}},
	{"zstd", kgo.CodecZstd, func(t testing.TB, src []byte) []byte {
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
		defer enc.Close()
		return enc.EncodeAll(src, nil)
	}},
	{"zstd-stream", kgo.CodecZstd, func(t testing.TB, src []byte) []byte {
		var b bytes.Buffer
		enc, _ := zstd.NewWriter(&b, zstd.WithEncoderLevel(zstd.SpeedFastest))
		if _, err := enc.Write(src); err != nil || enc.Close() != nil {
			t.Fatal("zstd", err)
		}
		return b.Bytes()
	}},
}

// TestDecompressBounded decompresses, per codec, records within the limit (they come back
// whole), a bomb (64 MiB of zeros, a few KiB compressed, against a 1 MiB limit: refused with
// MESSAGE_TOO_LARGE after allocating a few times the limit plus the codec's buffers, not the bomb)
// and a truncated stream
// (CORRUPT_MESSAGE).
func TestDecompressBounded(t *testing.T) {
	const limit = 1 << 20
	d := newDecompressor(limit)
	small := bytes.Repeat([]byte("strom kafka "), limit/24)
	bomb := make([]byte, 64<<20)
	for _, c := range compressors {
		t.Run(c.name, func(t *testing.T) {
			got, err := d.decompress(c.make(t, small), c.codec)
			if err != nil || !bytes.Equal(got, small) {
				t.Fatalf("within the limit: %d bytes, %v", len(got), err)
			}
			exact := bytes.Repeat([]byte{7}, limit)
			if got, err := d.decompress(c.make(t, exact), c.codec); err != nil || len(got) != limit {
				t.Fatalf("exactly the limit: %d bytes, %v", len(got), err)
			}

			payload := c.make(t, bomb)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = d.decompress(payload, c.codec)
			runtime.ReadMemStats(&after)
			if code := errCode(err); code != kerr.MessageTooLarge.Code {
				t.Fatalf("a %d-byte payload expanding to %d bytes: %v (code %d), want MESSAGE_TOO_LARGE", len(payload), len(bomb), err, code)
			}
			// The output buffer's growth, plus a codec's own buffers: lz4's frame blocks
			// (up to 4 MiB), zstd's window.
			bound := uint64(4*limit + zstdWindow)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
				t.Fatalf("refusing the bomb allocated %d bytes, more than %d; the limit is %d", alloc, bound, limit)
			}

			trunc := c.make(t, small)
			trunc = trunc[:len(trunc)/2]
			if _, err := d.decompress(trunc, c.codec); !errors.Is(err, errCorrupt) || errCode(err) != kerr.CorruptMessage.Code {
				t.Fatalf("a truncated stream: %v, want CORRUPT_MESSAGE", err)
			}
		})
	}
	if _, err := d.decompress([]byte{1, 2, 3}, 5); !errors.Is(err, errCorrupt) {
		t.Fatalf("codec 5: %v, want CORRUPT_MESSAGE", err)
	}
}

// TestDecompressLimitFollowsFrameLimit: the bound is the request frame limit, capped at
// maxDecompressed.
func TestDecompressLimitFollowsFrameLimit(t *testing.T) {
	for _, c := range []struct{ frame, want int }{{0, maxDecompressed}, {1 << 20, 1 << 20}, {1 << 30, maxDecompressed}} {
		if got := newDecompressor(c.frame).limit; got != c.want {
			t.Errorf("frame limit %d: batch limit %d, want %d", c.frame, got, c.want)
		}
	}
}

// FuzzDecompress feeds arbitrary payloads to each codec: records or an error, never a panic,
// never more than the limit.
func FuzzDecompress(f *testing.F) {
	for i, c := range compressors {
		f.Add(uint8(c.codec), c.make(f, bytes.Repeat([]byte{byte(i)}, 5000)))
	}
	d := newDecompressor(64 << 10)
	f.Fuzz(func(t *testing.T, codec uint8, data []byte) {
		out, err := d.decompress(data, kgo.CompressionCodecType(codec&0x07))
		if err == nil && codec&0x07 != 0 && len(out) > d.limit {
			t.Fatalf("%d bytes out, limit %d", len(out), d.limit)
		}
	})
}
