package kvstore

import (
	"fmt"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// changelog accumulates the change records of one PUT_KV bucket batch and builds the single
// V0 log batch they are appended as (Java WalBuilder): rows of the latest schema, in the
// table's log format, with the KV batch's writer id and sequence. An empty changelog still
// builds a batch (RecordCount 0, not append-only), which takes one offset.
type changelog interface {
	add(ct record.ChangeType, r []row.Datum) error
	count() int
	// build appends the batch to dst and empties the changelog.
	build(dst []byte, h record.V0Header) ([]byte, error)
	// reset discards accumulated records.
	reset()
}

func newChangelog(c *compiled) (changelog, error) {
	switch c.Config.LogFormat {
	case metadata.LogFormatCompacted:
		return &rowChangelog{types: c.types, indexed: false}, nil
	case metadata.LogFormatIndexed:
		return &rowChangelog{types: c.types, indexed: true}, nil
	}
	rb, err := arrowlog.NewRowBuilder(c.arrow, c.cols, nil)
	if err != nil {
		return nil, err
	}
	return &arrowChangelog{rb: rb, compress: c.compress, level: c.Config.ZstdLevel}, nil
}

// arrowChangelog builds ARROW batches with the change-type vector and the table's compression.
type arrowChangelog struct {
	rb       *arrowlog.RowBuilder
	cts      []byte
	compress arrowlog.Compression
	level    int
}

func (a *arrowChangelog) add(ct record.ChangeType, r []row.Datum) error {
	if err := a.rb.Append(r); err != nil {
		return ferr.New(ferr.CorruptRecordException, "changelog row: %v", err)
	}
	a.cts = append(a.cts, byte(ct))
	return nil
}

func (a *arrowChangelog) count() int { return len(a.cts) }

func (a *arrowChangelog) build(dst []byte, h record.V0Header) ([]byte, error) {
	rec := a.rb.NewRecord()
	defer rec.Release()
	defer func() { a.cts = a.cts[:0] }()
	if len(a.cts) == 0 {
		h.RecordCount, h.AppendOnly = 0, false
		return record.AppendV0Batch(dst, h, nil), nil
	}
	out, err := arrowlog.AppendBatch(dst, h, rec, a.cts, a.compress, a.level)
	if err != nil {
		return dst, fmt.Errorf("kvstore: encode changelog: %w", err)
	}
	return out, nil
}

func (a *arrowChangelog) reset() {
	a.rb.NewRecord().Release()
	a.cts = a.cts[:0]
}

// rowChangelog builds COMPACTED or INDEXED batches of row log records.
type rowChangelog struct {
	types   []metadata.DataType
	indexed bool
	buf     []byte // records section
	scratch []byte
	n       int
}

func (r *rowChangelog) add(ct record.ChangeType, d []row.Datum) error {
	var err error
	r.scratch = r.scratch[:0]
	if r.indexed {
		r.scratch, err = row.AppendIndexedRow(r.scratch, r.types, d)
	} else {
		r.scratch, err = row.AppendCompactedRow(r.scratch, r.types, d)
	}
	if err != nil {
		return ferr.New(ferr.CorruptRecordException, "changelog row: %v", err)
	}
	r.buf = record.AppendRowLogRecord(r.buf, ct, r.scratch)
	r.n++
	return nil
}

func (r *rowChangelog) count() int { return r.n }

func (r *rowChangelog) build(dst []byte, h record.V0Header) ([]byte, error) {
	h.RecordCount, h.AppendOnly = int32(r.n), false
	dst = record.AppendV0Batch(dst, h, r.buf)
	r.reset()
	return dst, nil
}

func (r *rowChangelog) reset() { r.buf, r.n = r.buf[:0], 0 }
