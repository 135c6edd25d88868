package arrowlog

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Change type byte values (ChangeType.java).
const (
	ChangeAppendOnly   byte = 0 // +A
	ChangeInsert       byte = 1 // +I
	ChangeUpdateBefore byte = 2 // -U
	ChangeUpdateAfter  byte = 3 // +U
	ChangeDelete       byte = 4 // -D
)

// Decode reads the records section of an ARROW log batch (the bytes after the batch header and
// any statistics) whose rows have the given Arrow schema. appendOnly and recordCount come from
// the batch header. It returns the change-type vector (nil for append-only batches, where every
// row is +A) and the rows as a record that the caller must Release.
//
// Uncompressed buffers of the returned record alias records when they are suitably aligned;
// keep records unmodified while the record is in use. mem allocates realigned copies. A
// batch with recordCount 0 carries no Arrow message and yields an empty record.
//
// Errors carry ferr.CorruptRecordException. Decode never panics.
func Decode(schema *arrow.Schema, appendOnly bool, recordCount int, records []byte, mem memory.Allocator) (changeTypes []byte, rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			changeTypes, rec = nil, nil
			err = corruptf("panic while decoding Arrow batch: %v", p)
		}
	}()
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if recordCount < 0 {
		return nil, nil, corruptf("negative record count %d", recordCount)
	}
	if !appendOnly {
		if len(records) < recordCount {
			return nil, nil, corruptf("records section of %d bytes is shorter than its %d-entry change-type vector", len(records), recordCount)
		}
		changeTypes = records[:recordCount:recordCount]
		for i, ct := range changeTypes {
			if ct > ChangeDelete {
				return nil, nil, corruptf("invalid change type %d at row %d", ct, i)
			}
		}
		records = records[recordCount:]
	}
	if recordCount == 0 {
		return changeTypes, emptyRecord(schema, mem), nil
	}
	m, err := parseMessage(records)
	if err != nil {
		return nil, nil, err
	}
	if m.rows != int64(recordCount) {
		return nil, nil, corruptf("Arrow batch has %d rows, header says %d", m.rows, recordCount)
	}
	l := loader{msg: &m, mem: mem}
	defer l.releaseAll()
	if m.codec == fbNoCodec && len(m.body) > 0 && uintptr(unsafe.Pointer(&m.body[0]))%8 != 0 {
		// Java writes the message right after an odd-length change-type vector; copy the body
		// so that typed views over it are aligned.
		b := l.alloc(len(m.body))
		copy(b, m.body)
		m.body = b
	}
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		f := schema.Field(i)
		d, err := l.load(f.Type, m.rows)
		if err != nil {
			return nil, nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		if int64(d.Len()) != m.rows {
			d.Release()
			return nil, nil, corruptf("column %q has %d rows, batch has %d", f.Name, d.Len(), m.rows)
		}
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	if l.inode != m.nNodes || l.ibuf != m.nBuffers {
		return nil, nil, corruptf("Arrow batch has %d nodes and %d buffers, schema uses %d and %d", m.nNodes, m.nBuffers, l.inode, l.ibuf)
	}
	return changeTypes, array.NewRecordBatch(schema, cols, m.rows), nil
}

func emptyRecord(schema *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return b.NewRecordBatch()
}

// loader turns the nodes and buffers of one message into array data, validating every
// length, offset and bitmap against the type before arrow-go sees it.
type loader struct {
	msg   *ipcMessage
	mem   memory.Allocator
	inode int
	ibuf  int
	owned []*memory.Buffer // allocator-backed buffers; released once arrays hold them
}

func (l *loader) releaseAll() {
	for _, b := range l.owned {
		b.Release()
	}
	l.owned = nil
}

// alloc returns an aligned byte slice owned by the loader's allocator.
func (l *loader) alloc(n int) []byte {
	b := memory.NewResizableBuffer(l.mem)
	b.Resize(n)
	l.owned = append(l.owned, b)
	return b.Bytes()
}

func (l *loader) node() (fieldNode, error) {
	if l.inode >= l.msg.nNodes {
		return fieldNode{}, corruptf("Arrow batch has too few field nodes (%d)", l.msg.nNodes)
	}
	n := l.msg.node(l.inode)
	l.inode++
	return n, nil
}

// buffer returns the next buffer's uncompressed bytes.
func (l *loader) buffer() ([]byte, error) {
	if l.ibuf >= l.msg.nBuffers {
		return nil, corruptf("Arrow batch has too few buffers (%d)", l.msg.nBuffers)
	}
	s := l.msg.buffer(l.ibuf)
	l.ibuf++
	raw := l.msg.body[s.offset : s.offset+s.length]
	if l.msg.codec == fbNoCodec {
		return raw, nil
	}
	out, err := decompressBuffer(raw, l.msg.codec)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 && uintptr(unsafe.Pointer(&out[0]))%8 != 0 {
		b := l.alloc(len(out))
		copy(b, out)
		out = b
	}
	return out, nil
}

// validity reads the validity buffer of a node and checks it against the null count. It
// returns nil when the node has no nulls (arrow-go then treats every slot as valid).
func (l *loader) validity(n fieldNode) (*memory.Buffer, error) {
	b, err := l.buffer()
	if err != nil {
		return nil, err
	}
	if n.nulls == 0 {
		return nil, nil
	}
	need := (n.length + 7) / 8
	if int64(len(b)) < need {
		return nil, corruptf("validity bitmap of %d bytes for %d rows", len(b), n.length)
	}
	if set := popcount(b, n.length); set != n.length-n.nulls {
		return nil, corruptf("validity bitmap has %d valid slots, node says %d", set, n.length-n.nulls)
	}
	return memory.NewBufferBytes(b[:need]), nil
}

func popcount(b []byte, nbits int64) int64 {
	full := nbits / 8
	var c int
	for i := int64(0); i < full; i++ {
		c += bits.OnesCount8(b[i])
	}
	if rem := nbits % 8; rem != 0 {
		c += bits.OnesCount8(b[full] & byte(1<<rem-1))
	}
	return int64(c)
}

// fixed reads a values buffer holding at least length elements of width bytes.
func (l *loader) fixed(length int64, width int64) (*memory.Buffer, error) {
	b, err := l.buffer()
	if err != nil {
		return nil, err
	}
	need := length * width
	if int64(len(b)) < need {
		return nil, corruptf("values buffer of %d bytes for %d values of %d bytes", len(b), length, width)
	}
	return memory.NewBufferBytes(b[:need]), nil
}

var zeroOffsets = make([]byte, 8)

// offsets reads an int32 offsets buffer for length slots and returns it with its first and
// last offsets. Offsets must be non-decreasing and non-negative.
func (l *loader) offsets(length int64) (*memory.Buffer, int64, int64, error) {
	b, err := l.buffer()
	if err != nil {
		return nil, 0, 0, err
	}
	if length == 0 && len(b) < 4 {
		return memory.NewBufferBytes(zeroOffsets[:4]), 0, 0, nil
	}
	need := (length + 1) * 4
	if int64(len(b)) < need {
		return nil, 0, 0, corruptf("offsets buffer of %d bytes for %d slots", len(b), length)
	}
	prev := int32(binary.LittleEndian.Uint32(b))
	if prev < 0 {
		return nil, 0, 0, corruptf("negative first offset %d", prev)
	}
	first := prev
	for i := int64(1); i <= length; i++ {
		o := int32(binary.LittleEndian.Uint32(b[i*4:]))
		if o < prev {
			return nil, 0, 0, corruptf("offsets decrease at slot %d (%d < %d)", i, o, prev)
		}
		prev = o
	}
	return memory.NewBufferBytes(b[:need]), int64(first), int64(prev), nil
}

// load reads the array for dt whose node must describe at least want rows.
func (l *loader) load(dt arrow.DataType, want int64) (arrow.ArrayData, error) {
	n, err := l.node()
	if err != nil {
		return nil, err
	}
	if n.length < want {
		return nil, corruptf("field node of %d rows where %d are needed", n.length, want)
	}
	valid, err := l.validity(n)
	if err != nil {
		return nil, err
	}
	switch t := dt.(type) {
	case *arrow.BooleanType:
		vals, err := l.fixedBits(n.length)
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, int(n.length), []*memory.Buffer{valid, vals}, nil, int(n.nulls), 0), nil
	case arrow.FixedWidthDataType:
		w := int64(t.BitWidth() / 8)
		vals, err := l.fixed(n.length, w)
		if err != nil {
			return nil, err
		}
		return array.NewData(dt, int(n.length), []*memory.Buffer{valid, vals}, nil, int(n.nulls), 0), nil
	case *arrow.StringType, *arrow.BinaryType:
		offs, _, last, err := l.offsets(n.length)
		if err != nil {
			return nil, err
		}
		data, err := l.buffer()
		if err != nil {
			return nil, err
		}
		if last > int64(len(data)) {
			return nil, corruptf("last offset %d beyond the %d-byte data buffer", last, len(data))
		}
		return array.NewData(dt, int(n.length), []*memory.Buffer{valid, offs, memory.NewBufferBytes(data[:last])}, nil, int(n.nulls), 0), nil
	case *arrow.ListType:
		return l.loadList(dt, t.Elem(), n, valid, false)
	case *arrow.MapType:
		return l.loadList(dt, t.Elem(), n, valid, true)
	case *arrow.StructType:
		children := make([]arrow.ArrayData, t.NumFields())
		for i := range children {
			c, err := l.load(t.Field(i).Type, n.length)
			if err != nil {
				releaseData(children)
				return nil, err
			}
			children[i] = c
		}
		d := array.NewData(dt, int(n.length), []*memory.Buffer{valid}, children, int(n.nulls), 0)
		releaseData(children)
		return d, nil
	}
	return nil, corruptf("unsupported Arrow type %s", dt)
}

func (l *loader) fixedBits(length int64) (*memory.Buffer, error) {
	b, err := l.buffer()
	if err != nil {
		return nil, err
	}
	need := (length + 7) / 8
	if int64(len(b)) < need {
		return nil, corruptf("boolean buffer of %d bytes for %d values", len(b), length)
	}
	return memory.NewBufferBytes(b[:need]), nil
}

func (l *loader) loadList(dt, elem arrow.DataType, n fieldNode, valid *memory.Buffer, isMap bool) (arrow.ArrayData, error) {
	offs, _, last, err := l.offsets(n.length)
	if err != nil {
		return nil, err
	}
	child, err := l.load(elem, last)
	if err != nil {
		return nil, err
	}
	defer child.Release()
	if isMap {
		// arrow-go (and the Arrow spec) require map entries and keys without nulls.
		if child.NullN() != 0 || len(child.Children()) != 2 || child.Children()[0].NullN() != 0 {
			return nil, corruptf("map entries or keys contain nulls")
		}
	}
	return array.NewData(dt, int(n.length), []*memory.Buffer{valid, offs}, []arrow.ArrayData{child}, int(n.nulls), 0), nil
}

func releaseData(ds []arrow.ArrayData) {
	for _, d := range ds {
		if d != nil {
			d.Release()
		}
	}
}
