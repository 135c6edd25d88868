package logstore

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/sendfile"
)

// fill appends n single-batch requests of count records each, one per millisecond from ts0.
func fill(t testing.TB, l *Log, n int, count int32, payload int, ts0 int64) []AppendResult {
	t.Helper()
	var rs []AppendResult
	for i := 0; i < n; i++ {
		rs = append(rs, mustAppend(t, l, ts0+int64(i), plain(count, payload)))
	}
	return rs
}

func TestReadSemantics(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	fill(t, l, 4, 5, 100, 1000) // batches [0,4] [5,9] [10,14] [15,19], 148 bytes each
	const size = 148
	cases := []struct {
		name     string
		offset   int64
		maxBytes int
		minOne   bool
		code     ferr.Code
		pos, len int64
	}{
		{"start", 0, 1 << 20, false, ferr.None, 0, 4 * size},
		{"mid-batch returns whole batch", 7, 1 << 20, false, ferr.None, size, 3 * size},
		{"last offset of batch", 9, 1 << 20, false, ferr.None, size, 3 * size},
		{"limit cuts at batch boundary", 0, 2*size + 10, false, ferr.None, 0, 2 * size},
		{"limit below one batch", 5, 10, false, ferr.None, 0, 0},
		{"minOne overrides limit", 5, 10, true, ferr.None, size, size},
		{"at HW is empty", 20, 1 << 20, false, ferr.None, 0, 0},
		{"above LEO", 21, 1 << 20, false, ferr.LogOffsetOutOfRangeException, 0, 0},
		{"negative", -1, 1 << 20, false, ferr.LogOffsetOutOfRangeException, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := l.Read(c.offset, c.maxBytes, c.minOne)
			defer r.Release()
			wantCode(t, err, c.code)
			if r.HighWatermark != 20 && err == nil {
				t.Fatalf("HW %d", r.HighWatermark)
			}
			if r.Size != c.len || (c.len > 0 && r.Position != c.pos) {
				t.Fatalf("range pos %d len %d, want pos %d len %d", r.Position, r.Size, c.pos, c.len)
			}
		})
	}
}

func TestSegmentRollingAndIndexes(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 2000, IndexIntervalBytes: 300}
	l := open(t, dir, opts)
	var want []AppendResult
	for i := 0; i < 120; i++ {
		count := int32(i % 4) // includes empty batches
		want = append(want, mustAppend(t, l, 10_000+int64(i/3), plain(count, 20+i%50)))
	}
	check := func(l *Log) {
		t.Helper()
		if segs := l.v.Load().segs; len(segs) < 5 {
			t.Fatalf("only %d segments", len(segs))
		}
		for _, w := range want {
			for off := w.FirstOffset; off <= w.LastOffset; off++ {
				r, err := l.Read(off, 1, true)
				if err != nil {
					t.Fatalf("Read(%d): %v", off, err)
				}
				b, err := r.AppendTo(nil)
				r.Release()
				if err != nil || record.Batch(b).BaseOffset() != w.FirstOffset || record.Batch(b).Validate() != nil {
					t.Fatalf("Read(%d) got batch at %d, want %d (%v)", off, record.Batch(b).BaseOffset(), w.FirstOffset, err)
				}
			}
		}
		if got := readAll(t, l, 0); len(got) != len(want) {
			t.Fatalf("readAll: %d batches, want %d", len(got), len(want))
		}
		// Each timestamp T first appears at the batch written at i = 3*(T-10000).
		for ts := int64(10_000); ts < 10_040; ts++ {
			off, err := l.OffsetForTimestamp(ts, 1<<62)
			if err != nil || off != want[3*(ts-10_000)].FirstOffset {
				t.Fatalf("OffsetForTimestamp(%d) = %d, %v; want %d", ts, off, err, want[3*(ts-10_000)].FirstOffset)
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if _, err := os.Stat(fileName(dir, 0, suf)); err != nil {
			t.Fatalf("sealed index missing: %v", err)
		}
	}
	l = open(t, dir, opts)
	check(l)
	crash(l)
	// Corrupt one sealed index, delete another: Open rebuilds them.
	segs, _ := scanDir(dir)
	if err := os.WriteFile(fileName(dir, segs[1], indexSuffix), []byte("garbage!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(fileName(dir, segs[2], timeIndexSuffix)); err != nil {
		t.Fatal(err)
	}
	l = open(t, dir, opts)
	defer l.Close()
	check(l)
	r := mustAppend(t, l, 20_000, plain(1, 8))
	if r.FirstOffset != want[len(want)-1].LastOffset+1 {
		t.Fatalf("append after reopen at %d", r.FirstOffset)
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	// Room for two time entries (24 bytes) per segment: a segment holds at most 3 index entries.
	l := open(t, t.TempDir(), Options{IndexIntervalBytes: 1, IndexMaxBytes: 24})
	defer l.Close()
	fill(t, l, 20, 1, 10, 1)
	segs := l.v.Load().segs
	if len(segs) < 5 {
		t.Fatalf("%d segments, want rolls on full index", len(segs))
	}
	for _, s := range segs {
		if s.idx.timeLen()*timeEntrySize > 24 || s.idx.offLen()*offsetEntrySize > 24 {
			t.Fatalf("segment %d index over capacity", s.base)
		}
	}
	if got := readAll(t, l, 0); len(got) != 20 {
		t.Fatalf("read %d batches", len(got))
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	now := int64(1_000_000)
	// Empty log: max timestamp is 0 as in Fluss.
	_, err := l.OffsetForTimestamp(now+1, now)
	wantCode(t, err, ferr.InvalidTimestampException)
	if off, err := l.OffsetForTimestamp(500, now); err != nil || off != 0 {
		t.Fatalf("empty log: %d %v", off, err)
	}
	_, err = l.OffsetForTimestamp(0, now)
	wantCode(t, err, ferr.InvalidTimestampException)

	mustAppend(t, l, 100, plain(2, 8))              // [0,1] ts 100
	mustAppend(t, l, 100, plain(3, 8))              // [2,4] ts 100
	mustAppend(t, l, 200, plain(1, 8), plain(1, 8)) // 5, 6 ts 200
	mustAppend(t, l, 300, plain(4, 8))              // [7,10] ts 300
	cases := []struct{ ts, off int64 }{
		{-5, 0}, {0, 0}, {100, 0}, {101, 5}, {200, 5}, {250, 7}, {300, 7}, {301, 11}, {now, 11},
	}
	for _, c := range cases {
		if off, err := l.OffsetForTimestamp(c.ts, now); err != nil || off != c.off {
			t.Fatalf("ts %d: %d %v, want %d", c.ts, off, err, c.off)
		}
	}
}

func TestReadLastRecords(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 300})
	defer l.Close()
	if b, hw, err := l.ReadLastRecords(10); err != nil || len(b) != 0 || hw != 0 {
		t.Fatalf("empty: %d %d %v", len(b), hw, err)
	}
	fill(t, l, 10, 4, 60, 1) // batches of 4 records, 108 bytes: two per segment
	cases := []struct {
		limit   int
		batches int
		first   int64
	}{{1, 1, 36}, {4, 1, 36}, {5, 2, 32}, {13, 4, 24}, {100, 10, 0}, {0, 0, 0}}
	for _, c := range cases {
		b, hw, err := l.ReadLastRecords(c.limit)
		if err != nil || hw != 40 {
			t.Fatalf("limit %d: %v hw %d", c.limit, err, hw)
		}
		n := 0
		for rest := b; len(rest) > 0; n++ {
			bt, r, ok := record.Split(rest)
			if !ok || bt.Validate() != nil {
				t.Fatalf("limit %d: bad batch", c.limit)
			}
			if n == 0 && bt.BaseOffset() != c.first {
				t.Fatalf("limit %d: first batch %d, want %d", c.limit, bt.BaseOffset(), c.first)
			}
			rest = r
		}
		if n != c.batches {
			t.Fatalf("limit %d: %d batches, want %d", c.limit, n, c.batches)
		}
	}
}

func TestWait(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, 0); err != context.DeadlineExceeded {
		t.Fatalf("Wait on empty log: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background(), 2) }()
	mustAppend(t, l, 1, plain(2, 8)) // HW 2: offset 2 still not readable
	select {
	case err := <-done:
		t.Fatalf("Wait returned early: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	mustAppend(t, l, 1, plain(1, 8))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- l.Wait(context.Background(), 100) }()
	time.Sleep(5 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != ErrClosed {
		t.Fatalf("Wait after Close: %v", err)
	}
}

func TestFlushIntervalPolicy(t *testing.T) {
	dir := t.TempDir()
	opts := Options{FlushPolicy: FlushInterval(5 * time.Millisecond)}
	l := open(t, dir, opts)
	fill(t, l, 50, 2, 30, 1)
	if l.HighWatermark() != 100 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
	time.Sleep(20 * time.Millisecond) // let the flusher run at least once
	crash(l)
	l = open(t, dir, opts)
	defer l.Close()
	if l.LogEndOffset() != 100 || len(readAll(t, l, 0)) != 50 {
		t.Fatalf("LEO %d after reopen", l.LogEndOffset())
	}
	if _, err := os.Stat(filepath.Join(dir, cleanMarker)); !os.IsNotExist(err) {
		t.Fatalf("clean marker must be gone while open: %v", err)
	}
}

func TestWriteToSendfileAndCopy(t *testing.T) {
	l := open(t, t.TempDir(), Options{})
	defer l.Close()
	fill(t, l, 20, 3, 500, 1)
	r, err := l.Read(6, 5000, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	want, _ := r.AppendTo(nil)

	var buf bytes.Buffer // no syscall.Conn: buffered copy
	if n, err := r.WriteTo(&buf); err != nil || n != r.Size || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("copy: %d %v", n, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, handled, err := sendfile.Send(c, r.File, r.Position, r.Size)
	c.Close()
	if err != nil || n != r.Size || (runtime.GOOS == "linux" && !handled) {
		t.Fatalf("sendfile: %d %v handled=%v", n, err, handled)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("sendfile delivered %d bytes, differing", len(b))
	}
}
