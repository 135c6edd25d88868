package kvstore

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/row"
)

// rbm64 is the union of two 64-bit Roaring bitmaps stored in a BYTES column (Java
// FieldRoaringBitmap64Agg). Fluss stores Roaring64Bitmap.serialize(DataOutput) of the
// RoaringBitmap Java library (1.3.0 in Fluss 0.9.1), a layout of that library's own — not the
// portable 64-bit format of CRoaring or of Go's roaring64 — which this file reads and writes:
//
//	bitmap:     int8 tag (0: empty, and nothing follows; 1: not empty) | tree | containers
//	tree:       int64 number of leaves | node (pre-order: a node, then its children in key order)
//	node:       int8 type (0 NODE4, 1 NODE16, 2 NODE48, 3 NODE256, 4 LEAF) | int16 count of
//	            children | int8 prefix length | prefix | body
//	body:       NODE4: 4 child key bytes, NODE16: 16, each half of 8 in reverse order;
//	            NODE48: 256 bytes, the position of the child of each key byte (0xFF: none),
//	            in groups of 8 in reverse order; NODE256: a 256-bit set of the child keys;
//	            LEAF: the 6 bytes of the high 48 bits of its values (big-endian) | int64
//	            container index (first-level index << 32 | second-level index)
//	containers: int32 n | n × (int8 -2 | int32 m | m × (int8 0: none | int8 1, int8 type (0 run,
//	            1 bitmap, 2 array), int32 cardinality, data)) | int64 containers | int32 last
//	            first-level index | int32 last second-level index
//	data:       run: int16 runs, then (start, length-1) per run; bitmap: 1024 int64 words;
//	            array: the sorted 16-bit values
//
// Integers are little-endian. The tree is an adaptive radix tree over the 6-byte high parts,
// its inner nodes path-compressed (the prefix) and of the smallest type that holds their
// children; the reader needs only its leaves, which carry whole keys. The writer builds the
// tree Java's inserts build for the same keys and numbers the containers in key order; it
// picks a container's type as Java's runOptimize does, which Fluss calls before serializing.
// A NULL on either side yields the other side unchanged; bytes that are not such a bitmap fail
// the write with UNKNOWN_SERVER_ERROR, as in Java. Bytes after the bitmap are ignored, as
// Java's deserialize(ByteBuffer) ignores them.
func rbm64(acc, in row.Datum) (row.Datum, error) {
	if acc.Null || in.Null {
		if acc.Null {
			return in, nil
		}
		return acc, nil
	}
	a, err := readBitmap64(acc.B)
	if err != nil {
		return row.Datum{}, err
	}
	b, err := readBitmap64(in.B)
	if err != nil {
		return row.Datum{}, err
	}
	for k, bm := range b {
		if cur, ok := a[k]; ok {
			cur.Or(bm)
		} else {
			a[k] = bm
		}
	}
	return row.Datum{B: appendBitmap64(nil, a)}, nil
}

// bitmap64 holds a 64-bit bitmap as Java's does: per high 48 bits, the set of low 16 bits.
type bitmap64 map[uint64]*roaring.Bitmap

// Node types of the tree (Java org.roaringbitmap.art.NodeType ordinals).
const (
	node4 = iota
	node16
	node48
	node256
	nodeLeaf
)

// Container types (Java art.Containers.containerType).
const (
	containerRun = iota
	containerBitmap
	containerArray
)

// maxTreeDepth bounds the nesting of inner nodes: each consumes at least one of the six key
// bytes, so a deeper tree is not one Java writes.
const maxTreeDepth = 6

func errBitmap64(format string, args ...any) error {
	return ferr.New(ferr.UnknownServerError, "Unable to se/deserialize roaring bitmap: "+format, args...)
}

// reader64 reads the little-endian fields of a serialized bitmap; the first short read sets
// err and every later read returns zeros.
type reader64 struct {
	b   []byte
	err error
}

func (r *reader64) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = errBitmap64("truncated")
		}
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader64) u8() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader64) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader64) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader64) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// readBitmap64 decodes Roaring64Bitmap.serialize's bytes.
func readBitmap64(b []byte) (bitmap64, error) {
	r := &reader64{b: b}
	out := bitmap64{}
	switch r.u8() {
	case 0:
		return out, r.err
	case 1:
	default:
		return nil, errBitmap64("bad tag")
	}
	r.u64()                       // the number of leaves, which the leaves themselves give
	leaves := map[uint64]uint64{} // container index -> high 48 bits
	if err := readNode(r, 0, leaves); err != nil {
		return nil, err
	}
	first := r.u32()
	if r.err == nil && uint64(first) > uint64(len(r.b)) {
		return nil, errBitmap64("%d container arrays in %d bytes", first, len(r.b))
	}
	for i := range uint64(first) {
		r.u8() // trimmed mark, unused by Java's reader
		second := r.u32()
		if r.err == nil && uint64(second) > uint64(len(r.b)) {
			return nil, errBitmap64("%d containers in %d bytes", second, len(r.b))
		}
		for j := range uint64(second) {
			switch r.u8() {
			case 0:
				continue
			case 1:
			default:
				if r.err == nil {
					return nil, errBitmap64("bad container mark")
				}
			}
			c, err := readContainer(r)
			if err != nil {
				return nil, err
			}
			idx := i<<32 | j
			key, ok := leaves[idx]
			if !ok {
				continue // no leaf refers to it
			}
			out[key] = c
			delete(leaves, idx)
		}
	}
	r.u64() // the number of containers
	r.u32() // the allocation cursor: first level
	r.u32() // and second level
	if r.err != nil {
		return nil, r.err
	}
	if len(leaves) > 0 {
		return nil, errBitmap64("%d leaves without their container", len(leaves))
	}
	return out, nil
}

// readNode reads a node and its subtree, recording each leaf's container index and key.
func readNode(r *reader64, depth int, leaves map[uint64]uint64) error {
	typ, count, prefix := r.u8(), r.u16(), r.u8()
	if prefix > 6 {
		return errBitmap64("prefix of %d bytes", prefix)
	}
	r.take(int(prefix))
	var body, maxCount int
	switch typ {
	case node4:
		body, maxCount = 4, 4
	case node16:
		body, maxCount = 16, 16
	case node48:
		body, maxCount = 256, 48
	case node256:
		body, maxCount = 32, 256
	case nodeLeaf:
		key := r.take(6)
		idx := r.u64()
		if r.err != nil {
			return r.err
		}
		var k [8]byte
		copy(k[2:], key)
		high := binary.BigEndian.Uint64(k[:])
		if _, dup := leaves[idx]; dup {
			return errBitmap64("two leaves share container %d", idx)
		}
		leaves[idx] = high
		return nil
	default:
		if r.err != nil {
			return r.err
		}
		return errBitmap64("node type %d", typ)
	}
	r.take(body)
	if r.err != nil {
		return r.err
	}
	if count < 1 || int(count) > maxCount || depth >= maxTreeDepth {
		return errBitmap64("node of type %d with %d children at depth %d", typ, count, depth)
	}
	for range count {
		if err := readNode(r, depth+1, leaves); err != nil {
			return err
		}
	}
	return nil
}

// readContainer reads one container's type, cardinality and data.
func readContainer(r *reader64) (*roaring.Bitmap, error) {
	typ, card := r.u8(), r.u32()
	bm := roaring.New()
	switch typ {
	case containerRun:
		n := int(r.u16())
		for range n {
			start, length := uint64(r.u16()), uint64(r.u16())+1
			if start+length > 1<<16 {
				return nil, errBitmap64("run past 65535")
			}
			bm.AddRange(start, start+length)
		}
	case containerBitmap:
		words := r.take(8192)
		for w := 0; w < len(words); w += 8 {
			for v := binary.LittleEndian.Uint64(words[w:]); v != 0; v &= v - 1 {
				bm.Add(uint32(w/8*64 + bits.TrailingZeros64(v)))
			}
		}
	case containerArray:
		if card > 1<<16 {
			return nil, errBitmap64("array of %d values", card)
		}
		vals := r.take(2 * int(card))
		for i := 0; i < len(vals); i += 2 {
			bm.Add(uint32(binary.LittleEndian.Uint16(vals[i:])))
		}
	default:
		if r.err == nil {
			return nil, errBitmap64("container type %d", typ)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return bm, nil
}

// appendBitmap64 appends m's serialization, as Java's serialize after runOptimize writes it.
func appendBitmap64(dst []byte, m bitmap64) []byte {
	keys := make([]uint64, 0, len(m))
	for k, bm := range m {
		if !bm.IsEmpty() {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return append(dst, 0)
	}
	slices.Sort(keys)
	dst = append(dst, 1)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(keys)))
	kb := make([][6]byte, len(keys))
	for i, k := range keys {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], k)
		copy(kb[i][:], b[2:])
	}
	dst = appendNode(dst, kb, 0, 0)
	// One container array holding the containers in key order: leaf i refers to container i.
	dst = binary.LittleEndian.AppendUint32(dst, 1)
	dst = append(dst, 0xfe) // not trimmed (-2)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(keys)))
	for _, k := range keys {
		dst = append(dst, 1)
		dst = appendContainer(dst, m[k])
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(keys)))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	return binary.LittleEndian.AppendUint32(dst, uint32(len(keys)-1))
}

// appendNode appends the subtree of the sorted, distinct keys, which agree on their first
// depth bytes; the leaf of keys[i] refers to container first+i.
func appendNode(dst []byte, keys [][6]byte, depth, first int) []byte {
	if len(keys) == 1 {
		dst = append(dst, nodeLeaf, 0, 0, 0)
		dst = append(dst, keys[0][:]...)
		return binary.LittleEndian.AppendUint64(dst, uint64(first))
	}
	// The common prefix of sorted keys is that of the first and the last.
	lo, hi := keys[0], keys[len(keys)-1]
	d := depth
	for lo[d] == hi[d] {
		d++
	}
	var groups []int // start of each run of keys sharing byte d
	for i := range keys {
		if i == 0 || keys[i][d] != keys[i-1][d] {
			groups = append(groups, i)
		}
	}
	n := len(groups)
	typ := byte(node256)
	switch {
	case n <= 4:
		typ = node4
	case n <= 16:
		typ = node16
	case n <= 48:
		typ = node48
	}
	dst = append(dst, typ)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(n))
	dst = append(dst, byte(d-depth))
	dst = append(dst, lo[depth:d]...)
	switch typ {
	case node4, node16:
		width := 4
		if typ == node16 {
			width = 16
		}
		var pos [16]byte // child keys by position, in key order
		for i, g := range groups {
			pos[i] = keys[g][d]
		}
		// Java packs them into big-endian ints (longs) and writes those little-endian.
		for half := 0; half < width; half += 8 {
			w := min(8, width)
			for i := half + w - 1; i >= half; i-- {
				dst = append(dst, pos[i])
			}
		}
	case node48:
		var index [256]byte
		for i := range index {
			index[i] = 0xff
		}
		for i, g := range groups {
			index[keys[g][d]] = byte(i)
		}
		for l := 0; l < 256; l += 8 {
			for i := l + 7; i >= l; i-- {
				dst = append(dst, index[i])
			}
		}
	case node256:
		var set [4]uint64
		for _, g := range groups {
			k := keys[g][d]
			set[k>>6] |= 1 << (k & 63)
		}
		for _, w := range set {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
	}
	for i, g := range groups {
		end := len(keys)
		if i+1 < n {
			end = groups[i+1]
		}
		dst = appendNode(dst, keys[g:end], d+1, first+g)
	}
	return dst
}

// appendContainer appends a container of 16-bit values as Java writes it after runOptimize:
// a run container when that is smaller than the array (at most 4096 values) or bitmap it
// would otherwise be.
func appendContainer(dst []byte, bm *roaring.Bitmap) []byte {
	vals := bm.ToArray()
	card := len(vals)
	runs := 0
	for i := range vals {
		if i == 0 || vals[i] != vals[i-1]+1 {
			runs++
		}
	}
	size := 8192
	if card <= 4096 {
		size = 2 * card
	}
	switch {
	case 2+4*runs < size:
		dst = append(dst, containerRun)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(card))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(runs))
		for i := 0; i < card; {
			j := i
			for j+1 < card && vals[j+1] == vals[j]+1 {
				j++
			}
			dst = binary.LittleEndian.AppendUint16(dst, uint16(vals[i]))
			dst = binary.LittleEndian.AppendUint16(dst, uint16(j-i))
			i = j + 1
		}
	case card <= 4096:
		dst = append(dst, containerArray)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(card))
		for _, v := range vals {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		}
	default:
		dst = append(dst, containerBitmap)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(card))
		var words [1024]uint64
		for _, v := range vals {
			words[v>>6] |= 1 << (v & 63)
		}
		for _, w := range words {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
	}
	return dst
}

// String renders the bitmap's values, for tests and messages.
func (m bitmap64) String() string {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var vals []uint64
	for _, k := range keys {
		for _, v := range m[k].ToArray() {
			vals = append(vals, k<<16|uint64(v))
		}
	}
	return fmt.Sprint(vals)
}
