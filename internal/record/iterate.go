package record

import (
	"fmt"
	"iter"
)

// BatchReader walks a concatenation of log batches (a records payload, a segment file
// region) without allocating. The zero value reads nothing; make one with NewBatchReader.
//
// Invariant: buf starts at the next unread batch; off is how many bytes precede it.
type BatchReader struct {
	buf []byte
	off int
	err error
}

// NewBatchReader returns a reader over buf. It aliases buf.
func NewBatchReader(buf []byte) BatchReader { return BatchReader{buf: buf} }

// Next returns the next complete batch. It returns ok=false at the end of the data, at a torn
// tail (fewer bytes than the next batch's Length claims, or fewer than LogOverhead), or when a
// complete batch fails the shape check (Err then reports why). Yielded batches are safe for
// every Batch accessor; their CRC is not checked (call Validate).
func (r *BatchReader) Next() (b Batch, ok bool) {
	if r.err != nil || len(r.buf) < LogOverhead {
		return nil, false
	}
	n := NextBatchSize(r.buf)
	if n < LogOverhead+1 {
		r.err = fmt.Errorf("batch at byte %d: %w: length field %d", r.off, ErrBadLength, n-LogOverhead)
		return nil, false
	}
	if n > len(r.buf) {
		return nil, false // torn tail
	}
	b = Batch(r.buf[:n:n])
	if err := b.checkShape(); err != nil {
		r.err = fmt.Errorf("batch at byte %d: %w", r.off, err)
		return nil, false
	}
	r.buf = r.buf[n:]
	r.off += n
	return b, true
}

// Err returns the error that stopped the reader, or nil when it stopped at the end of the
// data or at a torn tail.
func (r *BatchReader) Err() error { return r.err }

// Offset returns how many bytes the reader has consumed: the size of the complete batches
// returned so far.
func (r *BatchReader) Offset() int { return r.off }

// Rest returns the unread bytes: empty after a clean end, a torn tail, or the batch that
// failed the shape check.
func (r *BatchReader) Rest() []byte { return r.buf }

// Iterate yields each complete batch of buf in order, with a nil error. It stops silently at
// a torn tail, as both official clients do when a fetch response ends in a partial batch. A
// complete batch with a corrupt shape (see BatchReader.Next) is yielded as (nil, err) and ends
// the iteration. CRCs are not checked.
func Iterate(buf []byte) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		r := NewBatchReader(buf)
		for {
			b, ok := r.Next()
			if !ok {
				if r.err != nil {
					yield(nil, r.err)
				}
				return
			}
			if !yield(b, nil) {
				return
			}
		}
	}
}

// ValidateAll checks a PRODUCE_LOG records payload and returns its number of batches. Every
// batch must be complete and pass Validate, and no bytes may follow the last batch; any
// failure wraps one of the Err* sentinels (CORRUPT_RECORD_EXCEPTION). An empty payload is
// (0, nil); whether that is acceptable is the caller's decision.
//
// Java's leader silently trims a torn tail before appending; we reject it instead, since no
// official client sends one and a torn produce payload means the request was mangled.
func ValidateAll(records []byte) (n int, err error) {
	r := NewBatchReader(records)
	for {
		b, ok := r.Next()
		if !ok {
			break
		}
		if err := b.Validate(); err != nil {
			return n, fmt.Errorf("batch %d at byte %d: %w", n, r.Offset()-len(b), err)
		}
		n++
	}
	if r.Err() != nil {
		return n, r.Err()
	}
	if rest := r.Rest(); len(rest) > 0 {
		return n, fmt.Errorf("%w: %d bytes of an incomplete batch at byte %d",
			ErrTrailingBytes, len(rest), r.Offset())
	}
	return n, nil
}
