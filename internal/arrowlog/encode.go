package arrowlog

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/stromdb/strom/internal/record"
)

// scratch holds reusable encoding buffers.
type scratch struct {
	body    []byte
	out     []byte
	fb      *flatbuffers.Builder
	nodes   []fieldNode
	buffers []bufferSpec
}

var recordsPool = sync.Pool{New: func() any { return new([]byte) }}

var scratchPool = sync.Pool{New: func() any { return &scratch{fb: flatbuffers.NewBuilder(512)} }}

// Encode appends the records section of an ARROW log batch to dst: the change-type vector
// (when changeTypes is non-nil; it must hold one entry per row) followed by one Arrow IPC
// RecordBatch message with the continuation marker, 8-byte aligned metadata and a body
// compressed per buffer with the given codec (zstdLevel applies to CompressionZstd; 0 means
// the Fluss default 3). A record with no rows yields no Arrow message, as in Fluss.
//
// The message is what Fluss's Java and Rust readers accept: metadata V5, FieldNodes and
// Buffers in pre-order, zero-length validity buffers for columns without nulls.
func Encode(dst []byte, rec arrow.RecordBatch, changeTypes []byte, compression Compression, zstdLevel int) ([]byte, error) {
	rows := rec.NumRows()
	if changeTypes != nil {
		if int64(len(changeTypes)) != rows {
			return nil, fmt.Errorf("arrowlog: %d change types for %d rows", len(changeTypes), rows)
		}
		for i, ct := range changeTypes {
			if ct > ChangeDelete {
				return nil, fmt.Errorf("arrowlog: invalid change type %d at row %d", ct, i)
			}
		}
		dst = append(dst, changeTypes...)
	}
	if rows == 0 {
		return dst, nil
	}
	if compression > CompressionZstd {
		return nil, fmt.Errorf("arrowlog: unknown compression %d", compression)
	}
	p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("arrowlog: encode record: %w", err)
	}
	defer p.Release()
	if compression == CompressionNone {
		w := appendWriter{b: dst}
		if _, err := p.WritePayload(&w); err != nil {
			return nil, fmt.Errorf("arrowlog: write record: %w", err)
		}
		return w.b, nil
	}

	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	meta := p.Meta()
	defer meta.Release()
	root, err := fbRoot(meta.Bytes())
	if err != nil {
		return nil, fmt.Errorf("arrowlog: arrow-go metadata: %w", err)
	}
	rb, _, err := root.table(2)
	if err != nil {
		return nil, fmt.Errorf("arrowlog: arrow-go metadata: %w", err)
	}
	nodesV, nNodes, err1 := rb.structVector(1, fbStructSize)
	bufsV, nBufs, err2 := rb.structVector(2, fbStructSize)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("arrowlog: arrow-go metadata vectors malformed")
	}
	bw := appendWriter{b: s.body[:0]}
	if err := p.SerializeBody(&bw); err != nil {
		return nil, fmt.Errorf("arrowlog: serialize body: %w", err)
	}
	s.body = bw.b

	s.nodes = s.nodes[:0]
	for i := 0; i < nNodes; i++ {
		s.nodes = append(s.nodes, nodeAt(nodesV, i))
	}
	s.buffers = s.buffers[:0]
	out := s.out[:0]
	for i := 0; i < nBufs; i++ {
		b := bufferAt(bufsV, i)
		if b.offset < 0 || b.length < 0 || b.offset+b.length > int64(len(s.body)) {
			return nil, fmt.Errorf("arrowlog: arrow-go buffer %d outside body", i)
		}
		start := len(out)
		out, err = appendCompressed(out, s.body[b.offset:b.offset+b.length], compression, zstdLevel)
		if err != nil {
			return nil, err
		}
		s.buffers = append(s.buffers, bufferSpec{offset: int64(start), length: int64(len(out) - start)})
		out = pad8(out)
	}
	s.out = out
	metaFB := buildRecordBatchMeta(s.fb, rows, s.nodes, s.buffers, compression.fbCodec(), int64(len(out)))
	return appendMessage(dst, metaFB, out), nil
}

// appendMessage appends an encapsulated IPC message: continuation marker, metadata length
// (padded so that prefix+metadata is a multiple of 8), metadata, padding, body.
func appendMessage(dst, meta, body []byte) []byte {
	padded := (len(meta) + 7) &^ 7
	dst = binary.LittleEndian.AppendUint32(dst, ContinuationMarker)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(padded))
	dst = append(dst, meta...)
	for i := len(meta); i < padded; i++ {
		dst = append(dst, 0)
	}
	return append(dst, body...)
}

func pad8(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// AppendBatch appends a complete V0 ARROW log batch holding rec to dst. The header's
// RecordCount and AppendOnly fields are derived from rec and changeTypes (append-only exactly
// when changeTypes is nil); SchemaID, WriterID and BatchSequence come from hdr.
func AppendBatch(dst []byte, hdr record.V0Header, rec arrow.RecordBatch, changeTypes []byte, compression Compression, zstdLevel int) ([]byte, error) {
	bp := recordsPool.Get().(*[]byte)
	defer recordsPool.Put(bp)
	recs, err := Encode((*bp)[:0], rec, changeTypes, compression, zstdLevel)
	if err != nil {
		return nil, err
	}
	*bp = recs
	hdr.RecordCount = int32(rec.NumRows())
	hdr.AppendOnly = changeTypes == nil
	return record.AppendV0Batch(dst, hdr, recs), nil
}
