package metadata

import (
	"github.com/stromdb/strom/internal/ferr"
)

// Column positions of an added column (PbAddColumn.column_position_type).
const (
	ColumnPositionLast  int32 = 0
	ColumnPositionFirst int32 = 1
	ColumnPositionAfter int32 = 3
)

// AddColumn is one ALTER TABLE ... ADD column request.
type AddColumn struct {
	Name        string
	Type        DataType
	Comment     string
	Position    int32
	AggFunction *AggFunction
}

// AddColumns returns the schema that results from appending adds to s, as Fluss's
// SchemaUpdate does: a column that already exists is INVALID_ALTER_TABLE_EXCEPTION (56); a
// position other than last and a NOT NULL type are refused (UNKNOWN_SERVER_ERROR, Java's
// IllegalArgumentException). Each new column takes the next field id after HighestFieldID,
// then its nested ROW fields the following ones; existing ids never change, so readers map
// old data to the new schema by id. s is not modified.
func (s Schema) AddColumns(adds []AddColumn) (Schema, error) {
	out := s.Clone()
	for _, a := range adds {
		if out.Column(a.Name) != nil {
			return Schema{}, ferr.New(ferr.InvalidAlterTableException, "Column %s already exists.", a.Name)
		}
		switch a.Position {
		case ColumnPositionLast:
		case ColumnPositionFirst, ColumnPositionAfter:
			return Schema{}, ferr.New(ferr.UnknownServerError, "Only support addColumn column at last now.")
		default:
			return Schema{}, ferr.New(ferr.UnknownServerError, "Unknown column position type %d.", a.Position)
		}
		if a.Type.NotNull {
			return Schema{}, ferr.New(ferr.UnknownServerError, "Column %s must be nullable.", a.Name)
		}
		if err := a.Type.Validate(); err != nil {
			return Schema{}, ferr.New(ferr.InvalidAlterTableException, "Column %q: %v", a.Name, err)
		}
		next := out.HighestFieldID + 1
		c := Column{Name: a.Name, Type: a.Type, Comment: a.Comment, AggFunction: a.AggFunction, ID: next}
		reassignNestedIDs(&c.Type, &next, false)
		out.HighestFieldID = next
		out.Columns = append(out.Columns, c)
	}
	return out, nil
}

// WithSchema returns a copy of d with its schema replaced (ALTER TABLE ADD column). The
// caller validates the result like a created table.
func (d *TableDescriptor) WithSchema(s Schema) TableDescriptor {
	out := d.Clone()
	out.Schema = s
	return out
}
