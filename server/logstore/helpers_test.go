package logstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
)

// batch builds a real V0 batch as a client would send it (offsets and timestamp zero).
func batch(writer int64, seq int32, count int32, payload int) record.Batch {
	body := bytes.Repeat([]byte{byte(count), byte(seq)}, payload/2+1)[:payload]
	if count == 0 {
		body = nil
	}
	return record.Batch(record.AppendV0Batch(nil, record.V0Header{
		SchemaID: 1, AppendOnly: true, WriterID: writer, BatchSequence: seq, RecordCount: count,
	}, body))
}

// plain builds a non-idempotent batch.
func plain(count int32, payload int) record.Batch {
	return batch(record.NoWriterID, -1, count, payload)
}

func open(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	if opts.Now == nil {
		// Tests use small commit timestamps; keep writers from expiring on Open.
		opts.Now = func() time.Time { return time.UnixMilli(100_000) }
	}
	l, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, now int64, bs ...record.Batch) AppendResult {
	t.Helper()
	r, err := l.Append(bs, now)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return r
}

// crash abandons l without any of Close's bookkeeping, like kill -9 (the bytes written so
// far stay, as they would in the page cache).
func crash(l *Log) {
	l.mu.Lock()
	stop := l.syncer.stop
	l.syncer.stop = nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-l.syncer.done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segs {
		s.release()
	}
}

// readAll reads every batch from offset to the HW, checking that each one validates.
func readAll(t testing.TB, l *Log, from int64) []record.Batch {
	t.Helper()
	return collectBatches(t, "Read", from, l.HighWatermark, l.Read, true)
}

// collectBatches reads with read (Log.Read or Replica.ReadReplica, named what) from offset up to
// end(), splitting what it returns into batches; with validate each batch must validate.
func collectBatches(t testing.TB, what string, from int64, end func() int64,
	read func(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error), validate bool) []record.Batch {
	t.Helper()
	var out []record.Batch
	for off := from; off < end(); {
		r, err := read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("%s(%d): %v", what, off, err)
		}
		if r.Size == 0 {
			t.Fatalf("%s(%d) empty below %d", what, off, end())
		}
		buf, err := r.AppendTo(nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		for len(buf) > 0 {
			b, rest, ok := record.Split(buf)
			if !ok {
				t.Fatalf("torn batch in %s at %d", what, off)
			}
			if validate {
				if err := b.Validate(); err != nil {
					t.Fatalf("stored batch at %d invalid: %v", b.BaseOffset(), err)
				}
			}
			out = append(out, b)
			off, buf = b.NextOffset(), rest
		}
	}
	return out
}

func wantCode(t testing.TB, err error, c ferr.Code) {
	t.Helper()
	if got := ferr.CodeOf(err); got != c {
		t.Fatalf("error %v: code %v, want %v", err, got, c)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var _ = errors.Is
