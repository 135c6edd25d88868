package fluss

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// WriteResult is the handle of one appended, upserted or deleted row (or Arrow record). Wait
// blocks until the server acknowledged the batch holding it.
type WriteResult struct {
	b *writeBatch
}

// Wait waits until the write is acknowledged and returns its error, if any. It returns
// ctx's error if ctx ends first (the write itself goes on).
func (r *WriteResult) Wait(ctx context.Context) error {
	select {
	case <-r.b.done:
		return r.b.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done returns a channel closed when the write completed (successfully or not).
func (r *WriteResult) Done() <-chan struct{} { return r.b.done }

// writeBatch is one bucket's batch: it is built row by row while open, then sealed into
// payload (a V0 log batch or a KV batch) when it is first sent. Invariants: only the head
// batch of a bucket queue may be in flight; a sealed batch's payload is resent unchanged on
// retry unless the writer id was reset, which reseals it.
type writeBatch struct {
	tb        TableBucket
	partition string // partition name, for metadata refreshes

	// Building state, guarded by writer.mu.
	arrowB *arrowlog.RowBuilder // ARROW log rows
	rec    arrow.RecordBatch    // a whole Arrow record appended as is
	buf    []byte               // row-log or KV batch being built in place
	count  int32
	size   int // reserved buffer bytes (estimate)
	full   bool
	opened time.Time

	// Sending state.
	payload  []byte
	sealed   bool
	seq      int32
	writerID int64
	attempts int

	done chan struct{}
	err  error
}

func newBatch(tb TableBucket, partition string) *writeBatch {
	return &writeBatch{tb: tb, partition: partition, opened: time.Now(), done: make(chan struct{}), seq: -1}
}

// seal builds payload on first use and (re)writes its header for the given writer id and
// sequence.
func (w *writer) seal(b *writeBatch, writerID int64, seq int32) error {
	schemaID := int16(w.t.info.SchemaID)
	if b.payload == nil {
		switch {
		case b.buf != nil:
			b.payload, b.buf = b.buf, nil
		default:
			rec := b.rec
			if rec == nil {
				rec = b.arrowB.NewRecord()
				b.arrowB.Release()
				b.arrowB = nil
			}
			var err error
			b.payload, err = arrowlog.AppendBatch(nil, record.V0Header{SchemaID: schemaID, WriterID: writerID, BatchSequence: seq}, rec, nil, w.compression, w.zstdLevel)
			rec.Release()
			b.rec = nil
			if err != nil {
				return fmt.Errorf("fluss: encode Arrow batch: %w", err)
			}
		}
	}
	var err error
	if w.kv {
		err = record.FinishKvBatch(b.payload, record.KvHeader{SchemaID: schemaID, WriterID: writerID, BatchSequence: seq}, b.count)
	} else {
		err = record.FinishV0Batch(b.payload, record.V0Header{SchemaID: schemaID, AppendOnly: true, WriterID: writerID, BatchSequence: seq, RecordCount: b.count})
	}
	if err != nil {
		return err
	}
	b.sealed, b.seq, b.writerID = true, seq, writerID
	return nil
}

// release frees the building state of a batch that will never be sealed.
func (b *writeBatch) release() {
	if b.arrowB != nil {
		b.arrowB.Release()
		b.arrowB = nil
	}
	if b.rec != nil {
		b.rec.Release()
		b.rec = nil
	}
}

// datumSize estimates the encoded size of a value.
func datumSize(d *row.Datum) int {
	n := 8 + len(d.B)
	for i := range d.Elems {
		n += datumSize(&d.Elems[i])
	}
	for i := range d.Vals {
		n += datumSize(&d.Vals[i])
	}
	return n
}

func rowSize(vals []row.Datum) int {
	n := 8
	for i := range vals {
		n += datumSize(&vals[i])
	}
	return n
}

// logCompression maps the table's Arrow compression option.
func logCompression(d *metadata.TableDescriptor) (arrowlog.Compression, int) {
	c, level := d.Properties.ArrowCompression()
	switch c {
	case metadata.CompressionNone:
		return arrowlog.CompressionNone, level
	case metadata.CompressionLZ4Frame:
		return arrowlog.CompressionLZ4Frame, level
	}
	return arrowlog.CompressionZstd, level
}
