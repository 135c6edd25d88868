package arrowlog

import (
	"encoding/binary"
	"errors"

	flatbuffers "github.com/google/flatbuffers/go"
)

// This file reads and writes the few Arrow flatbuffer tables a RecordBatch message needs
// (Message.fbs: Message, RecordBatch, FieldNode, Buffer, BodyCompression). The reader checks
// every offset against the buffer before dereferencing it, unlike generated flatbuffer code,
// so corrupt metadata yields an error instead of a panic.

var errFlatbuffer = errors.New("malformed Arrow message flatbuffer")

// fbTable is a bounds-checked view of one flatbuffer table.
type fbTable struct {
	buf    []byte
	pos    int // start of the table (its soffset to the vtable)
	vt     int // start of the vtable
	vtLen  int // vtable size in bytes
	tblLen int // table size in bytes, as recorded in the vtable
}

func u32(b []byte, at int) uint32 { return binary.LittleEndian.Uint32(b[at:]) }
func u16(b []byte, at int) uint16 { return binary.LittleEndian.Uint16(b[at:]) }

// fbRoot returns the root table of buf.
func fbRoot(buf []byte) (fbTable, error) {
	if len(buf) < 4 {
		return fbTable{}, errFlatbuffer
	}
	return fbTableAt(buf, int(u32(buf, 0)))
}

func fbTableAt(buf []byte, pos int) (fbTable, error) {
	if pos < 0 || pos > len(buf)-4 {
		return fbTable{}, errFlatbuffer
	}
	vt := pos - int(int32(u32(buf, pos)))
	if vt < 0 || vt > len(buf)-4 {
		return fbTable{}, errFlatbuffer
	}
	vtLen, tblLen := int(u16(buf, vt)), int(u16(buf, vt+2))
	if vtLen < 4 || vtLen&1 != 0 || vt+vtLen > len(buf) || tblLen < 4 || pos+tblLen > len(buf) {
		return fbTable{}, errFlatbuffer
	}
	return fbTable{buf: buf, pos: pos, vt: vt, vtLen: vtLen, tblLen: tblLen}, nil
}

// field returns the absolute position of field i, or 0 when the field is absent. It fails
// when the field would extend past the table.
func (t fbTable) field(i, size int) (int, error) {
	at := 4 + 2*i
	if at+2 > t.vtLen {
		return 0, nil
	}
	off := int(u16(t.buf, t.vt+at))
	if off == 0 {
		return 0, nil
	}
	if off < 4 || off+size > t.tblLen {
		return 0, errFlatbuffer
	}
	return t.pos + off, nil
}

func (t fbTable) int64(i int, def int64) (int64, error) {
	p, err := t.field(i, 8)
	if err != nil || p == 0 {
		return def, err
	}
	return int64(binary.LittleEndian.Uint64(t.buf[p:])), nil
}

func (t fbTable) int16(i int, def int16) (int16, error) {
	p, err := t.field(i, 2)
	if err != nil || p == 0 {
		return def, err
	}
	return int16(u16(t.buf, p)), nil
}

func (t fbTable) int8(i int, def int8) (int8, error) {
	p, err := t.field(i, 1)
	if err != nil || p == 0 {
		return def, err
	}
	return int8(t.buf[p]), nil
}

// table returns the sub-table referenced by field i; ok is false when the field is absent.
func (t fbTable) table(i int) (sub fbTable, ok bool, err error) {
	p, err := t.field(i, 4)
	if err != nil || p == 0 {
		return fbTable{}, false, err
	}
	sub, err = fbTableAt(t.buf, p+int(u32(t.buf, p)))
	return sub, err == nil, err
}

// structVector returns the bytes of a vector of fixed-size structs referenced by field i and
// its element count. An absent field is an empty vector.
func (t fbTable) structVector(i, elemSize int) ([]byte, int, error) {
	p, err := t.field(i, 4)
	if err != nil || p == 0 {
		return nil, 0, err
	}
	v := p + int(u32(t.buf, p))
	if v < 0 || v > len(t.buf)-4 {
		return nil, 0, errFlatbuffer
	}
	n := int(u32(t.buf, v))
	if n > (len(t.buf)-v-4)/elemSize {
		return nil, 0, errFlatbuffer
	}
	return t.buf[v+4 : v+4+n*elemSize], n, nil
}

// Arrow flatbuffer constants (Schema.fbs, Message.fbs).
const (
	fbMetadataV5          = 4
	fbHeaderRecordBatch   = 3
	fbCodecLZ4Frame       = 0
	fbCodecZstd           = 1
	fbNoCodec             = -1 // our marker for "no BodyCompression table"
	fbStructSize          = 16 // FieldNode and Buffer are both two int64s
	fbMessageFields       = 5
	fbRecordBatchFields   = 5
	fbBodyCompressionFlds = 2
)

// fieldNode is FieldNode{length, null_count}.
type fieldNode struct{ length, nulls int64 }

// bufferSpec is Buffer{offset, length}, relative to the message body.
type bufferSpec struct{ offset, length int64 }

func nodeAt(v []byte, i int) fieldNode {
	return fieldNode{
		length: int64(binary.LittleEndian.Uint64(v[i*fbStructSize:])),
		nulls:  int64(binary.LittleEndian.Uint64(v[i*fbStructSize+8:])),
	}
}

func bufferAt(v []byte, i int) bufferSpec {
	return bufferSpec{
		offset: int64(binary.LittleEndian.Uint64(v[i*fbStructSize:])),
		length: int64(binary.LittleEndian.Uint64(v[i*fbStructSize+8:])),
	}
}

// buildRecordBatchMeta serializes a Message{RecordBatch} flatbuffer in the same order as
// arrow-go (and therefore byte-identical to what arrow-go writes for the same content).
// codec is fbNoCodec for an uncompressed body.
func buildRecordBatchMeta(b *flatbuffers.Builder, rows int64, nodes []fieldNode, bufs []bufferSpec, codec int8, bodyLen int64) []byte {
	b.Reset()
	b.StartVector(fbStructSize, len(nodes), 8)
	for i := len(nodes) - 1; i >= 0; i-- {
		b.Prep(8, fbStructSize)
		b.PrependInt64(nodes[i].nulls)
		b.PrependInt64(nodes[i].length)
	}
	nodesOff := b.EndVector(len(nodes))
	b.StartVector(fbStructSize, len(bufs), 8)
	for i := len(bufs) - 1; i >= 0; i-- {
		b.Prep(8, fbStructSize)
		b.PrependInt64(bufs[i].length)
		b.PrependInt64(bufs[i].offset)
	}
	bufsOff := b.EndVector(len(bufs))
	var compOff flatbuffers.UOffsetT
	if codec != fbNoCodec {
		b.StartObject(fbBodyCompressionFlds)
		b.PrependInt8Slot(0, codec, 0)
		b.PrependInt8Slot(1, 0, 0) // method BUFFER
		compOff = b.EndObject()
	}
	b.StartObject(fbRecordBatchFields)
	b.PrependInt64Slot(0, rows, 0)
	b.PrependUOffsetTSlot(1, nodesOff, 0)
	b.PrependUOffsetTSlot(2, bufsOff, 0)
	if codec != fbNoCodec {
		b.PrependUOffsetTSlot(3, compOff, 0)
	}
	rb := b.EndObject()
	b.StartObject(fbMessageFields)
	b.PrependInt16Slot(0, fbMetadataV5, 0)
	b.PrependByteSlot(1, fbHeaderRecordBatch, 0)
	b.PrependUOffsetTSlot(2, rb, 0)
	b.PrependInt64Slot(3, bodyLen, 0)
	msg := b.EndObject()
	b.Finish(msg)
	return b.FinishedBytes()
}
