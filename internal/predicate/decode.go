package predicate

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/proto/flusspb"
)

// ErrInvalid is wrapped by every error Decode returns.
var ErrInvalid = errors.New("invalid filter predicate")

// Wire codes of PbPredicate.type and PbCompoundPredicate.function.
const (
	typeLeaf     = 0
	typeCompound = 1
	compoundAnd  = 0
	compoundOr   = 1
)

// maxDepth bounds the nesting of compound predicates Decode accepts.
const maxDepth = 64

// Decode converts a PbPredicate into a Predicate over schema, the schema the client named
// in filter_schema_id: a leaf's field_id is a top-level column id of that schema, and its
// literals are read by the column's type (as Fluss's PredicateMessageUtils does; the
// literal_type code is not trusted). It fails, wrapping ErrInvalid, on an unknown type or
// function, an unknown field, a type without literals, a literal count that does not fit
// the function, or nesting deeper than maxDepth.
func Decode(pb *flusspb.PbPredicate, schema metadata.Schema) (Predicate, error) {
	return decode(pb, &schema, 0)
}

func decode(pb *flusspb.PbPredicate, schema *metadata.Schema, depth int) (Predicate, error) {
	if pb == nil {
		return nil, fmt.Errorf("%w: missing predicate", ErrInvalid)
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalid, maxDepth)
	}
	switch pb.GetType() {
	case typeLeaf:
		return decodeLeaf(pb.GetLeaf(), schema)
	case typeCompound:
		c := pb.GetCompound()
		if c == nil || len(c.GetChildren()) == 0 {
			return nil, fmt.Errorf("%w: compound predicate without children", ErrInvalid)
		}
		children := make([]Predicate, len(c.GetChildren()))
		for i, ch := range c.GetChildren() {
			p, err := decode(ch, schema, depth+1)
			if err != nil {
				return nil, err
			}
			children[i] = p
		}
		switch c.GetFunction() {
		case compoundAnd:
			return And(children), nil
		case compoundOr:
			return Or(children), nil
		}
		return nil, fmt.Errorf("%w: unknown compound function %d", ErrInvalid, c.GetFunction())
	}
	return nil, fmt.Errorf("%w: unknown predicate type %d", ErrInvalid, pb.GetType())
}

func decodeLeaf(pb *flusspb.PbLeafPredicate, schema *metadata.Schema) (*Leaf, error) {
	if pb == nil {
		return nil, fmt.Errorf("%w: leaf predicate missing", ErrInvalid)
	}
	op := Op(pb.GetFunction())
	if op < Equal || op > NotIn {
		return nil, fmt.Errorf("%w: unknown leaf function %d", ErrInvalid, pb.GetFunction())
	}
	var col *metadata.Column
	for i := range schema.Columns {
		if schema.Columns[i].ID == pb.GetFieldId() {
			col = &schema.Columns[i]
			break
		}
	}
	if col == nil {
		return nil, fmt.Errorf("%w: no top-level field with id %d", ErrInvalid, pb.GetFieldId())
	}
	n := len(pb.GetLiterals())
	switch op {
	case IsNull, IsNotNull:
		if n != 0 {
			return nil, fmt.Errorf("%w: %s takes no literal, got %d", ErrInvalid, op, n)
		}
	case In, NotIn:
		if n == 0 {
			return nil, fmt.Errorf("%w: %s needs literals", ErrInvalid, op)
		}
	default:
		if n != 1 {
			return nil, fmt.Errorf("%w: %s takes one literal, got %d", ErrInvalid, op, n)
		}
	}
	if (op == StartsWith || op == Contains || op == EndsWith) && !isString(col.Type.Root) {
		return nil, fmt.Errorf("%w: %s on column %q of type root %d", ErrInvalid, op, col.Name, col.Type.Root)
	}
	l := &Leaf{Op: op, FieldID: col.ID, Name: col.Name, Type: col.Type, Literals: make([]row.Datum, n)}
	for i, lit := range pb.GetLiterals() {
		d, err := literal(lit, col.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %w", ErrInvalid, col.Name, err)
		}
		l.Literals[i] = d
	}
	return l, nil
}

// literal reads a PbLiteralValue as a value of type t.
func literal(pb *flusspb.PbLiteralValue, t metadata.DataType) (row.Datum, error) {
	if pb.GetIsNull() {
		return row.NullDatum, nil
	}
	switch t.Root {
	case metadata.Boolean:
		if pb.GetBooleanValue() {
			return row.Datum{I: 1}, nil
		}
		return row.Datum{}, nil
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.Time:
		return row.Datum{I: int64(pb.GetIntValue())}, nil
	case metadata.BigInt:
		return row.Datum{I: pb.GetBigintValue()}, nil
	case metadata.Date:
		return row.Datum{I: int64(int32(pb.GetBigintValue()))}, nil
	case metadata.Float:
		return row.Datum{F: float64(pb.GetFloatValue())}, nil
	case metadata.Double:
		return row.Datum{F: pb.GetDoubleValue()}, nil
	case metadata.Char, metadata.String:
		return row.Datum{B: []byte(pb.GetStringValue())}, nil
	case metadata.Binary, metadata.Bytes:
		return row.Datum{B: append([]byte{}, pb.GetBinaryValue()...)}, nil
	case metadata.Timestamp, metadata.TimestampLTZ:
		nanos := pb.GetTimestampNanoOfMillisValue()
		if nanos < 0 || nanos > 999_999 {
			return row.Datum{}, fmt.Errorf("nano of millisecond %d out of range", nanos)
		}
		return row.Datum{I: pb.GetTimestampMillisValue(), Nanos: nanos}, nil
	case metadata.Decimal:
		return decimal(pb, t)
	}
	return row.Datum{}, fmt.Errorf("no literals of type root %d", t.Root)
}

// decimal reads an unscaled decimal (already in the column's scale, as clients send it) in
// the representation row.Datum uses for t's precision.
func decimal(pb *flusspb.PbLiteralValue, t metadata.DataType) (row.Datum, error) {
	var x *big.Int
	if pb.DecimalBytes != nil {
		if len(pb.DecimalBytes) == 0 || len(pb.DecimalBytes) > 16 {
			return row.Datum{}, fmt.Errorf("decimal of %d bytes", len(pb.DecimalBytes))
		}
		x = signedBig(pb.DecimalBytes)
	} else {
		x = big.NewInt(pb.GetDecimalValue())
	}
	if t.Precision <= row.MaxCompactDecimalPrecision {
		if !x.IsInt64() {
			return row.Datum{}, fmt.Errorf("decimal %s does not fit precision %d", x, t.Precision)
		}
		return row.Datum{I: x.Int64()}, nil
	}
	return row.Datum{B: twosComplement(x)}, nil
}

// twosComplement writes x in the minimal big-endian two's complement form.
func twosComplement(x *big.Int) []byte {
	if x.Sign() >= 0 {
		b := x.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -x-1 has the complement bits of x's magnitude - 1.
	m := new(big.Int).Not(x) // = -x-1 >= 0
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}
