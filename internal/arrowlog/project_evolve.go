package arrowlog

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
)

// NewProjectionTo prepares the projection of batches written under an older schema version,
// stored, onto the fields projected of a later version, target (with id targetID), for
// readers that expect the later shape. Fluss only ever appends (nullable) columns, so
// target's first stored.NumFields() fields are stored's; a projected field beyond them is
// emitted as an all-null column of target's type. Batches projected this way carry targetID
// as their schema id, since their columns are target's. When every projected field is
// stored, this is NewProjection(stored, projected) and batches keep their schema id.
//
// (A Java server refuses such a projection with INVALID_COLUMN_PROJECTION; Strom answers it.)
func NewProjectionTo(stored, target *arrow.Schema, targetID int16, projected []int) (*Projection, error) {
	n := stored.NumFields()
	var inStored []int
	for _, f := range projected {
		if f < n {
			inStored = append(inStored, f)
		}
	}
	if len(inStored) == len(projected) {
		return NewProjection(stored, projected)
	}
	// Validate the projection against the target schema first: order, duplicates, bounds.
	if _, err := NewProjection(target, projected); err != nil {
		return nil, err
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	var p *Projection
	var err error
	if n > 0 {
		if p, err = NewProjection(stored, all); err != nil {
			return nil, err
		}
	} else {
		p = &Projection{}
	}
	p.fields = append([]int(nil), projected...)
	p.fill = make([]arrow.DataType, len(projected))
	for i, f := range projected {
		if f >= n {
			p.fill[i] = target.Field(f).Type
		}
	}
	p.relabel = targetID
	return p, nil
}

// appendNullColumn appends the field nodes and buffers of a column of type dt with rows
// values, all NULL: validity bitmaps of zeros, zeroed fixed-width values and offsets, empty
// variable-length values and list children. In a compressed body each non-empty buffer is
// written uncompressed behind the -1 length prefix.
func appendNullColumn(dt arrow.DataType, rows int64, compressed bool, nodes *[]fieldNode, addBuffer func([]byte)) error {
	zeros := func(n int64) {
		if n == 0 {
			addBuffer(nil)
			return
		}
		var b []byte
		if compressed {
			b = make([]byte, 8+n)
			marker := int64(uncompressedMarker)
			binary.LittleEndian.PutUint64(b, uint64(marker))
		} else {
			b = make([]byte, n)
		}
		addBuffer(b)
	}
	bitmap := (rows + 7) / 8
	nulls := rows
	*nodes = append(*nodes, fieldNode{length: rows, nulls: nulls})
	switch t := dt.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		zeros(bitmap)
		zeros((rows + 1) * 4)
		zeros(0)
	case *arrow.ListType:
		zeros(bitmap)
		zeros((rows + 1) * 4)
		return appendNullColumnChild(t.Elem(), compressed, nodes, addBuffer)
	case *arrow.MapType:
		zeros(bitmap)
		zeros((rows + 1) * 4)
		return appendNullColumnChild(t.Elem(), compressed, nodes, addBuffer)
	case *arrow.StructType:
		zeros(bitmap)
		for _, f := range t.Fields() {
			if err := appendNullColumn(f.Type, rows, compressed, nodes, addBuffer); err != nil {
				return err
			}
		}
	case *arrow.BooleanType:
		zeros(bitmap)
		zeros(bitmap)
	case arrow.FixedWidthDataType:
		zeros(bitmap)
		zeros(rows * int64(t.BitWidth()/8))
	default:
		return projectionf("unsupported Arrow type %s in projection", dt)
	}
	return nil
}

// appendNullColumnChild appends the empty child array of an all-null list or map.
func appendNullColumnChild(dt arrow.DataType, compressed bool, nodes *[]fieldNode, addBuffer func([]byte)) error {
	return appendNullColumn(dt, 0, compressed, nodes, addBuffer)
}
