// Package protowalk reads a protobuf message field by field, for the hand-written decoders
// that keep large bytes fields aliasing their input instead of copying them (PRODUCE_LOG on
// the server, FETCH_LOG on the client; docs/architecture.md and docs/benchmarks.md, "The
// FETCH_LOG client decoder").
//
// Next refuses what proto.Unmarshal refuses at the wire level — a malformed tag, a field
// number above protowire.MaxValidNumber (protowire.ConsumeTag alone accepts up to
// math.MaxInt32), a truncated value — so a decoder built on it accepts the same inputs.
package protowalk

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one field of a message.
type Field struct {
	Num  protowire.Number
	Type protowire.Type
	// Varint is the value of a VarintType field.
	Varint uint64
	// Bytes is the value of a BytesType field; it aliases the input of Next.
	Bytes []byte
}

// Is reports whether f is field num with wire type typ; a known field number with another
// wire type is an unknown field to proto.Unmarshal, and a decoder skips it.
func (f Field) Is(num protowire.Number, typ protowire.Type) bool {
	return f.Num == num && f.Type == typ
}

// ErrFieldNumber is the error of a tag whose field number is above protowire.MaxValidNumber.
var ErrFieldNumber = errors.New("protowalk: invalid field number")

// Next reads the field at the start of b (which must not be empty) and returns it with the
// number of bytes it took. Values of wire types other than varint and bytes are skipped.
func Next(b []byte) (Field, int, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return Field{}, 0, protowire.ParseError(n)
	}
	if num > protowire.MaxValidNumber {
		return Field{}, 0, ErrFieldNumber
	}
	f := Field{Num: num, Type: typ}
	var m int
	switch typ {
	case protowire.VarintType:
		f.Varint, m = protowire.ConsumeVarint(b[n:])
	case protowire.BytesType:
		f.Bytes, m = protowire.ConsumeBytes(b[n:])
	default:
		m = protowire.ConsumeFieldValue(num, typ, b[n:])
	}
	if m < 0 {
		return Field{}, 0, protowire.ParseError(m)
	}
	return f, n + m, nil
}
