package row

import "github.com/stromdb/strom/internal/metadata"

// CompactedReader walks the fields of one CompactedRow in order without allocating (nested
// ARRAY/MAP/ROW values allocate only when the target Datum has no reusable capacity). The
// zero value is unusable; call Reset first.
//
//	var r row.CompactedReader
//	if err := r.Reset(types, buf); err != nil { ... }
//	for r.More() {
//		if err := r.Next(&d); err != nil { ... }
//	}
type CompactedReader struct {
	types  []metadata.DataType
	buf    []byte
	pos    int // offset of the next field's value bytes
	field  int // index of the next field
	noBits bool
}

// Reset points r at the row buf described by types. It fails only if buf is shorter than the
// null bitset.
func (r *CompactedReader) Reset(types []metadata.DataType, buf []byte) error {
	hdr := (len(types) + 7) / 8
	*r = CompactedReader{types: types, buf: buf, pos: hdr}
	if len(buf) < hdr {
		r.field = len(types)
		return errTruncated("compacted row null bitset", hdr, len(buf))
	}
	return nil
}

// resetKey points r at a compacted key: the same value encodings without a null bitset.
func (r *CompactedReader) resetKey(types []metadata.DataType, key []byte) {
	*r = CompactedReader{types: types, buf: key, noBits: true}
}

// More reports whether fields remain.
func (r *CompactedReader) More() bool { return r.field < len(r.types) }

// Field returns the index of the next field.
func (r *CompactedReader) Field() int { return r.field }

// Offset returns the byte offset of the next field's value within the row.
func (r *CompactedReader) Offset() int { return r.pos }

// Done reports an error unless every field was consumed and no bytes remain.
func (r *CompactedReader) Done() error {
	if r.field < len(r.types) {
		return corruptf("compacted row: %d fields not read", len(r.types)-r.field)
	}
	if r.pos != len(r.buf) {
		return corruptf("compacted row has %d trailing bytes", len(r.buf)-r.pos)
	}
	return nil
}

func (r *CompactedReader) isNull() bool {
	return !r.noBits && !r.types[r.field].NotNull && bitGet(r.buf, r.field)
}

// Next decodes the next field into d. Byte-valued Datums alias the row buffer.
func (r *CompactedReader) Next(d *Datum) error {
	if r.field >= len(r.types) {
		return corruptf("compacted row: read past field %d", len(r.types))
	}
	if r.isNull() {
		*d = Datum{Null: true}
		r.field++
		return nil
	}
	p, err := readCompactedValue(r.buf, r.pos, &r.types[r.field], d)
	if err != nil {
		return corruptf("compacted row field %d: %v", r.field, err)
	}
	r.pos = p
	r.field++
	return nil
}

// NextRaw returns the next field's encoded value bytes (length prefixes included), aliasing the
// row buffer, or null=true for a NULL field. Raw values can be copied into another
// CompactedRow of the same field type (see AppendCompactedRaw); nested values are not
// validated.
func (r *CompactedReader) NextRaw() (null bool, raw []byte, err error) {
	if r.field >= len(r.types) {
		return false, nil, corruptf("compacted row: read past field %d", len(r.types))
	}
	if r.isNull() {
		r.field++
		return true, nil, nil
	}
	p, err := skipCompactedValue(r.buf, r.pos, &r.types[r.field])
	if err != nil {
		return false, nil, corruptf("compacted row field %d: %v", r.field, err)
	}
	raw = r.buf[r.pos:p:p]
	r.pos = p
	r.field++
	return false, raw, nil
}

// Skip moves past the next field.
func (r *CompactedReader) Skip() error {
	_, _, err := r.NextRaw()
	return err
}
