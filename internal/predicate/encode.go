package predicate

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
	"github.com/stromdb/strom/proto/flusspb"
)

// literalTypeCodes maps type roots to PbDataTypeRoot codes (Fluss's DataTypeRootCode).
var literalTypeCodes = map[metadata.TypeRoot]int32{
	metadata.Boolean: 0, metadata.TinyInt: 1, metadata.SmallInt: 2, metadata.Int: 3,
	metadata.BigInt: 4, metadata.Float: 5, metadata.Double: 6, metadata.Char: 7,
	metadata.String: 8, metadata.Decimal: 9, metadata.Date: 10, metadata.Time: 11,
	metadata.Timestamp: 12, metadata.TimestampLTZ: 13, metadata.Binary: 14, metadata.Bytes: 15,
}

// LiteralPB encodes d, a value of t, as Fluss clients do (the inverse of what Decode reads).
func LiteralPB(t metadata.DataType, d row.Datum) (*flusspb.PbLiteralValue, error) {
	code, ok := literalTypeCodes[t.Root]
	if !ok {
		return nil, fmt.Errorf("predicate: no literals of type %s", t)
	}
	pb := &flusspb.PbLiteralValue{LiteralType: proto.Int32(code), IsNull: proto.Bool(d.Null)}
	if d.Null {
		return pb, nil
	}
	switch t.Root {
	case metadata.Boolean:
		pb.BooleanValue = proto.Bool(d.I != 0)
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.Time:
		pb.IntValue = proto.Int32(int32(d.I))
	case metadata.BigInt, metadata.Date:
		pb.BigintValue = proto.Int64(d.I)
	case metadata.Float:
		pb.FloatValue = proto.Float32(float32(d.F))
	case metadata.Double:
		pb.DoubleValue = proto.Float64(d.F)
	case metadata.Char, metadata.String:
		pb.StringValue = proto.String(string(d.B))
	case metadata.Binary, metadata.Bytes:
		pb.BinaryValue = append([]byte{}, d.B...)
	case metadata.Decimal:
		if t.Precision <= row.MaxCompactDecimalPrecision {
			pb.DecimalValue = proto.Int64(d.I)
		} else {
			pb.DecimalBytes = append([]byte{}, d.B...)
		}
	case metadata.Timestamp, metadata.TimestampLTZ:
		pb.TimestampMillisValue = proto.Int64(d.I)
		pb.TimestampNanoOfMillisValue = proto.Int32(d.Nanos)
	}
	return pb, nil
}

// LeafPB builds a leaf PbPredicate on the column with field id fieldID.
func LeafPB(op Op, fieldID int32, lits ...*flusspb.PbLiteralValue) *flusspb.PbPredicate {
	return &flusspb.PbPredicate{Type: proto.Int32(typeLeaf), Leaf: &flusspb.PbLeafPredicate{
		Function: proto.Int32(int32(op)), FieldId: proto.Int32(fieldID), Literals: lits}}
}

// CompoundPB builds an AND (or=false) or OR of children.
func CompoundPB(or bool, children ...*flusspb.PbPredicate) *flusspb.PbPredicate {
	fn := int32(compoundAnd)
	if or {
		fn = compoundOr
	}
	return &flusspb.PbPredicate{Type: proto.Int32(typeCompound), Compound: &flusspb.PbCompoundPredicate{
		Function: proto.Int32(fn), Children: children}}
}
