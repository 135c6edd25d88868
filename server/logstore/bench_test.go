package logstore

import (
	"testing"

	"github.com/stromdb/strom/internal/record"
)

// BenchmarkAppend measures appending 16 KiB batches (one per request) under each flush policy.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    FlushPolicy
	}{{"every-append", FlushEveryAppend}, {"interval", FlushInterval(0)}} {
		b.Run(bc.name, func(b *testing.B) {
			l := open(b, b.TempDir(), Options{FlushPolicy: bc.p, SegmentBytes: 64 << 20})
			defer l.Close()
			tmpl := plain(100, 16<<10)
			buf := make([]byte, len(tmpl))
			bs := []record.Batch{nil}
			b.SetBytes(int64(len(tmpl)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, tmpl)
				bs[0] = buf
				if _, err := l.Append(bs, int64(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead measures reading 1 MiB ranges (index lookup plus copy into a reused buffer).
func BenchmarkRead(b *testing.B) {
	l := open(b, b.TempDir(), Options{FlushPolicy: FlushInterval(0)})
	defer l.Close()
	for i := 0; i < 2000; i++ {
		mustAppend(b, l, int64(i), plain(100, 16<<10))
	}
	hw := l.HighWatermark()
	var dst []byte
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		off := int64(i*7919) % hw
		r, err := l.Read(off, 1<<20, true)
		if err != nil {
			b.Fatal(err)
		}
		dst, err = r.AppendTo(dst[:0])
		r.Release()
		if err != nil {
			b.Fatal(err)
		}
		n += int64(len(dst))
	}
	b.SetBytes(n / int64(b.N))
}

// BenchmarkAppendParallel shows group commit: concurrent appends to one Log share fdatasyncs.
func BenchmarkAppendParallel(b *testing.B) {
	l := open(b, b.TempDir(), Options{SegmentBytes: 64 << 20})
	defer l.Close()
	tmpl := plain(100, 16<<10)
	b.SetBytes(int64(len(tmpl)))
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, len(tmpl))
		bs := []record.Batch{nil}
		for pb.Next() {
			copy(buf, tmpl)
			bs[0] = buf
			if _, err := l.Append(bs, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFirstReadAfterOpen measures reading data that no read has verified since the
// segment was opened (after a clean restart): each range is CRC-checked once before it is
// served. Compare with BenchmarkRead, whose data was verified when it was appended.
func BenchmarkFirstReadAfterOpen(b *testing.B) {
	l := open(b, b.TempDir(), Options{FlushPolicy: FlushInterval(0)})
	defer l.Close()
	for i := 0; i < 500; i++ {
		mustAppend(b, l, int64(i), plain(100, 16<<10))
	}
	hw := l.HighWatermark()
	var dst []byte
	var n int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, s := range l.v.Load().segs {
			s.verified.truncate(0) // as after a clean reopen
		}
		b.StartTimer()
		for off := int64(0); off < hw; {
			r, err := l.Read(off, 1<<20, true)
			if err != nil {
				b.Fatal(err)
			}
			dst, err = r.AppendTo(dst[:0])
			r.Release()
			if err != nil {
				b.Fatal(err)
			}
			n += int64(len(dst))
			for rest := dst; len(rest) > 0; {
				bb, tail, _ := record.Split(rest)
				off, rest = bb.NextOffset(), tail
			}
		}
	}
	b.SetBytes(n / int64(b.N))
}
