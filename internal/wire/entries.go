package wire

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxEntryDepth bounds the recursion of countEntries; Fluss messages nest a few levels deep.
const maxEntryDepth = 64

// countEntries counts the nested messages and repeated elements in b, the encoding of a
// message described by md, without decoding it. Decoding costs heap per entry (a nested Go
// message is a few hundred bytes however few bytes it had on the wire), so this is what a
// request's decoded size is bounded by. Counting stops as soon as it exceeds limit (limit <= 0:
// no stop). Malformed input ends the count; proto.Unmarshal reports it.
func countEntries(b []byte, md protoreflect.MessageDescriptor, limit int) int {
	n := 0
	countInto(b, md, limit, 0, &n)
	return n
}

func countInto(b []byte, md protoreflect.MessageDescriptor, limit, depth int, n *int) {
	if depth > maxEntryDepth {
		return
	}
	fields := md.Fields()
	for len(b) > 0 {
		if limit > 0 && *n > limit {
			return
		}
		num, typ, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			return
		}
		vl := protowire.ConsumeFieldValue(num, typ, b[tl:])
		if vl < 0 {
			return
		}
		value := b[tl : tl+vl]
		b = b[tl+vl:]
		fd := fields.ByNumber(num)
		if fd == nil {
			continue
		}
		switch {
		case (fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind) && typ == protowire.BytesType:
			*n++
			if v, m := protowire.ConsumeBytes(value); m >= 0 {
				countInto(v, fd.Message(), limit, depth+1, n)
			}
		case fd.IsList() && typ == protowire.BytesType && fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.BytesKind:
			// A packed list of scalars.
			v, m := protowire.ConsumeBytes(value)
			if m < 0 {
				continue
			}
			switch fd.Kind() {
			case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
				*n += len(v) / 4
			case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
				*n += len(v) / 8
			default: // varints: one element ends at each byte without the continuation bit
				for _, c := range v {
					if c < 0x80 {
						*n++
					}
				}
			}
		case fd.IsList():
			*n++
		}
	}
}
