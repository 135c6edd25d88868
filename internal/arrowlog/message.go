package arrowlog

import (
	"encoding/binary"
)

// ContinuationMarker opens every encapsulated Arrow IPC message Fluss writes.
const ContinuationMarker = 0xFFFFFFFF

// ipcPrefix is the continuation marker plus the int32 metadata length.
const ipcPrefix = 8

// ipcMessage is a parsed, bounds-checked encapsulated RecordBatch message.
//
// Invariants after parseMessage: meta = msg[8 : 8+metaLen]; body = msg[8+metaLen :
// 8+metaLen+bodyLen]; nodes holds nNodes FieldNode structs and buffers nBuffers Buffer
// structs; every Buffer lies inside body; codec is fbNoCodec, fbCodecLZ4Frame or fbCodecZstd.
type ipcMessage struct {
	rows     int64
	nodes    []byte
	nNodes   int
	buffers  []byte
	nBuffers int
	codec    int8
	metaLen  int
	body     []byte
	size     int // 8 + metaLen + bodyLen: the message's bytes within the input
}

func (m *ipcMessage) node(i int) fieldNode    { return nodeAt(m.nodes, i) }
func (m *ipcMessage) buffer(i int) bufferSpec { return bufferAt(m.buffers, i) }

// parseMessage parses the encapsulated RecordBatch message at the start of b. Bytes after the
// message are ignored (readers in Java and Rust stop at the message's end too).
func parseMessage(b []byte) (ipcMessage, error) {
	var m ipcMessage
	if len(b) < ipcPrefix {
		return m, corruptf("Arrow message of %d bytes is shorter than its prefix", len(b))
	}
	if binary.LittleEndian.Uint32(b) != ContinuationMarker {
		return m, corruptf("Arrow message does not start with the continuation marker")
	}
	metaLen := int(int32(binary.LittleEndian.Uint32(b[4:])))
	// Every writer (Java, arrow-go, arrow-rs) pads the metadata to a multiple of 8; Java and
	// Rust disagree on where the body starts otherwise, so anything else is corrupt.
	if metaLen <= 0 || metaLen%8 != 0 || metaLen > len(b)-ipcPrefix {
		return m, corruptf("Arrow metadata length %d invalid for %d bytes", metaLen, len(b))
	}
	meta := b[ipcPrefix : ipcPrefix+metaLen]
	root, err := fbRoot(meta)
	if err != nil {
		return m, corrupt(err)
	}
	if v, err := root.int16(0, 0); err != nil || v < fbMetadataV5-1 {
		return m, corruptf("unsupported Arrow metadata version %d", v)
	}
	if ht, err := root.int8(1, 0); err != nil || ht != fbHeaderRecordBatch {
		return m, corruptf("Arrow message is not a RecordBatch (header type %d)", ht)
	}
	bodyLen, err := root.int64(3, 0)
	if err != nil {
		return m, corrupt(err)
	}
	if bodyLen < 0 || bodyLen > int64(len(b)-ipcPrefix-metaLen) {
		return m, corruptf("Arrow body length %d exceeds the %d bytes left", bodyLen, len(b)-ipcPrefix-metaLen)
	}
	rb, ok, err := root.table(2)
	if err != nil || !ok {
		return m, corruptf("Arrow message has no RecordBatch header")
	}
	if m.rows, err = rb.int64(0, 0); err != nil {
		return m, corrupt(err)
	}
	if m.rows < 0 || m.rows > maxRows {
		return m, corruptf("Arrow row count %d out of range", m.rows)
	}
	if m.nodes, m.nNodes, err = rb.structVector(1, fbStructSize); err != nil {
		return m, corrupt(err)
	}
	if m.buffers, m.nBuffers, err = rb.structVector(2, fbStructSize); err != nil {
		return m, corrupt(err)
	}
	m.codec = fbNoCodec
	comp, ok, err := rb.table(3)
	if err != nil {
		return m, corrupt(err)
	}
	if ok {
		codec, err := comp.int8(0, fbCodecLZ4Frame)
		if err != nil {
			return m, corrupt(err)
		}
		method, err := comp.int8(1, 0)
		if err != nil {
			return m, corrupt(err)
		}
		if (codec != fbCodecLZ4Frame && codec != fbCodecZstd) || method != 0 {
			return m, corruptf("unsupported Arrow body compression codec %d method %d", codec, method)
		}
		m.codec = codec
	}
	m.metaLen = metaLen
	m.body = b[ipcPrefix+metaLen : ipcPrefix+metaLen+int(bodyLen)]
	m.size = ipcPrefix + metaLen + int(bodyLen)
	for i := 0; i < m.nBuffers; i++ {
		s := m.buffer(i)
		if s.offset < 0 || s.length < 0 || s.offset > bodyLen || s.length > bodyLen-s.offset {
			return m, corruptf("Arrow buffer %d [%d,+%d) outside the %d-byte body", i, s.offset, s.length, bodyLen)
		}
	}
	for i := 0; i < m.nNodes; i++ {
		n := m.node(i)
		if n.length < 0 || n.length > maxRows || n.nulls < 0 || n.nulls > n.length {
			return m, corruptf("Arrow field node %d has length %d and %d nulls", i, n.length, n.nulls)
		}
	}
	return m, nil
}

// maxRows bounds row and element counts so that size arithmetic cannot overflow.
const maxRows = 1 << 40
