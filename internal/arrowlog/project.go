package arrowlog

import (
	"encoding/binary"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/stromdb/strom/internal/record"
)

// Projection selects top-level columns of ARROW batches written with one schema, working on
// the IPC buffers directly: the kept buffers are copied as stored (still compressed), only the
// RecordBatch metadata is rebuilt. This is Fluss's FileLogProjection. A Projection is
// immutable and safe for concurrent use; cache it per (schema id, projection).
type Projection struct {
	fields     []int // projected top-level positions, ascending
	nodeSpan   []span
	bufSpan    []span
	totalNodes int
	totalBufs  int

	// Set by NewProjectionTo when some projected fields are missing from the stored schema:
	// fill[i] is the Arrow type of the all-null column that stands in for fields[i] (nil for
	// stored fields), and relabel the schema id the projected batches are written with.
	fill    []arrow.DataType
	relabel int16
}

// span is a [start, start+n) range of nodes or buffers belonging to one top-level field.
type span struct{ start, n int }

// NewProjection validates projected (non-empty, strictly ascending, each within the schema)
// and prepares the node and buffer ranges of each top-level field. Invalid projections yield
// ferr.InvalidColumnProjection.
func NewProjection(schema *arrow.Schema, projected []int) (*Projection, error) {
	nf := schema.NumFields()
	if len(projected) == 0 {
		return nil, projectionf("Empty projection is not supported. Please project at least one column.")
	}
	prev := -1
	for _, p := range projected {
		switch {
		case p < prev:
			return nil, projectionf("The projection indexes should be in field order, but is %v", projected)
		case p == prev:
			return nil, projectionf("The projection indexes should not contain duplicated fields, but is %v", projected)
		case p >= nf:
			return nil, projectionf("Projected fields %v is out of bound for schema with %d fields.", projected, nf)
		case p < 0:
			return nil, projectionf("Projected fields %v contains a negative index", projected)
		}
		prev = p
	}
	pr := &Projection{fields: append([]int(nil), projected...)}
	for i := 0; i < nf; i++ {
		n, b, err := layoutCount(schema.Field(i).Type)
		if err != nil {
			return nil, err
		}
		pr.nodeSpan = append(pr.nodeSpan, span{pr.totalNodes, n})
		pr.bufSpan = append(pr.bufSpan, span{pr.totalBufs, b})
		pr.totalNodes += n
		pr.totalBufs += b
	}
	return pr, nil
}

// layoutCount returns how many field nodes and buffers a field of type dt occupies in a
// RecordBatch message (Arrow TypeLayout, pre-order over the field tree).
func layoutCount(dt arrow.DataType) (nodes, bufs int, err error) {
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		return 1, 3, nil
	case *arrow.ListType:
		n, b, err := layoutCount(t.Elem())
		return 1 + n, 2 + b, err
	case *arrow.MapType:
		n, b, err := layoutCount(t.Elem()) // the entries struct
		return 1 + n, 2 + b, err
	case *arrow.StructType:
		nodes, bufs = 1, 1
		for _, f := range t.Fields() {
			n, b, err := layoutCount(f.Type)
			if err != nil {
				return 0, 0, err
			}
			nodes += n
			bufs += b
		}
		return nodes, bufs, nil
	case arrow.FixedWidthDataType:
		return 1, 2, nil
	}
	return 0, 0, projectionf("unsupported Arrow type %s in projection", dt)
}

// Offsets of the header fields that projection rewrites (docs/encodings.md §3.1, §3.5).
const (
	offLength        = 8
	offMagic         = 12
	crcOffsetV01     = 21
	crcOffsetV2      = 25
	statsLenFromHead = 4 // StatisticsLength is the last int32 of the V1/V2 header
)

type projScratch struct {
	fb      *flatbuffers.Builder
	nodes   []fieldNode
	buffers []bufferSpec
	pieces  [][]byte // body bytes of each buffer, in order
}

var projPool = sync.Pool{New: func() any { return &projScratch{fb: flatbuffers.NewBuilder(512)} }}

// AppendBatch appends the projection of one complete ARROW batch to dst. The header is kept
// (same magic, offsets, writer, sequence, record count) with Length updated; for V1/V2 the
// statistics are dropped and StatisticsLength set to 0; the change-type vector is copied; the
// Arrow message keeps the selected nodes and buffers (buffers copied byte for byte, each
// padded to 8) and the original compression. Unlike Java, the CRC is recomputed, so the
// result also passes CRC checks. Header-only (empty) batches are appended unchanged.
// Malformed batches yield ferr.CorruptRecordException.
func (p *Projection) AppendBatch(dst []byte, b record.Batch) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, corrupt(err)
	}
	hdrSize := b.HeaderSize()
	recs := b.Records()
	if len(recs) == 0 {
		return append(dst, b...), nil
	}
	ctLen := 0
	if !b.AppendOnly() {
		ctLen = int(b.RecordCount())
		if ctLen > len(recs) {
			return nil, corruptf("change-type vector longer than the records section")
		}
	}
	m, err := parseMessage(recs[ctLen:])
	if err != nil {
		return nil, err
	}
	if m.nNodes != p.totalNodes || m.nBuffers != p.totalBufs {
		return nil, corruptf("Arrow batch has %d nodes and %d buffers, schema needs %d and %d", m.nNodes, m.nBuffers, p.totalNodes, p.totalBufs)
	}

	s := projPool.Get().(*projScratch)
	defer projPool.Put(s)
	s.nodes, s.buffers, s.pieces = s.nodes[:0], s.buffers[:0], s.pieces[:0]
	var bodyLen int64
	addBuffer := func(piece []byte) {
		l := int64(len(piece))
		s.buffers = append(s.buffers, bufferSpec{offset: bodyLen, length: l})
		s.pieces = append(s.pieces, piece)
		bodyLen += (l + 7) &^ 7
	}
	for i, f := range p.fields {
		if p.fill != nil && p.fill[i] != nil {
			if err := appendNullColumn(p.fill[i], m.rows, m.codec != fbNoCodec, &s.nodes, addBuffer); err != nil {
				return nil, err
			}
			continue
		}
		ns, bs := p.nodeSpan[f], p.bufSpan[f]
		for i := ns.start; i < ns.start+ns.n; i++ {
			s.nodes = append(s.nodes, m.node(i))
		}
		for i := bs.start; i < bs.start+bs.n; i++ {
			sp := m.buffer(i)
			addBuffer(m.body[sp.offset : sp.offset+sp.length])
		}
	}
	meta := buildRecordBatchMeta(s.fb, m.rows, s.nodes, s.buffers, m.codec, bodyLen)

	start := len(dst)
	dst = append(dst, b[:hdrSize]...)
	if b.Magic() != record.MagicV0 {
		binary.LittleEndian.PutUint32(dst[start+hdrSize-statsLenFromHead:], 0)
	}
	dst = append(dst, recs[:ctLen]...)
	dst = appendMessage(dst, meta, nil)
	for _, piece := range s.pieces {
		dst = append(dst, piece...)
		dst = append(dst, zeroPad[:((len(piece)+7)&^7)-len(piece)]...)
	}
	clear(s.pieces) // do not keep batch memory alive in the pool
	out := dst[start:]
	binary.LittleEndian.PutUint32(out[offLength:], uint32(len(out)-record.LogOverhead))
	crcAt := crcOffsetV01
	if out[offMagic] == record.MagicV2 {
		crcAt = crcOffsetV2
	}
	if p.fill != nil {
		binary.LittleEndian.PutUint16(out[crcAt+4:], uint16(p.relabel)) // the schema id follows the CRC
	}
	binary.LittleEndian.PutUint32(out[crcAt:], record.Checksum(out[crcAt+4:]))
	return dst, nil
}

var zeroPad [8]byte
