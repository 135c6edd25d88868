package fluss

import (
	"context"
	"fmt"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// A primary-key table's stored values carry the id of the schema they were written with
// ([int16 schema id][row]). After ALTER TABLE ... ADD COLUMN a value written before has
// fewer fields than the table has columns, and one written after the Table was opened may
// have more. Fluss adds columns only at the end and nullable, so a value of another schema
// maps onto the Table's columns by position: columns the value lacks read NULL, fields the
// Table does not know are dropped.

// schemaTypes returns the column types of schema id of t's table: the Table's own for its
// schema, otherwise fetched once (GET_TABLE_SCHEMA) and cached for the Table's life.
func (t *Table) schemaTypes(ctx context.Context, id int16) ([]metadata.DataType, error) {
	if int32(id) == t.info.SchemaID {
		return t.types, nil
	}
	if v, ok := t.schemas.Load(id); ok {
		return v.([]metadata.DataType), nil
	}
	if t.conn == nil { // a Table decoding without a connection (the decoders' fuzz test)
		return nil, publicError(fmt.Errorf("fluss: value of schema %d, the table has schema %d", id, t.info.SchemaID))
	}
	s, _, err := t.conn.Admin().GetTableSchema(ctx, t.info.Path, int32(id))
	if err != nil {
		return nil, fmt.Errorf("fluss: schema %d of %s: %w", id, t.info.Path, err)
	}
	types := make([]metadata.DataType, len(s.Columns))
	for i, c := range s.Columns {
		types[i] = c.Type.internal()
	}
	t.schemas.Store(id, types)
	return types, nil
}

// decodeStored decodes a stored value to datums of the Table's columns, whatever schema it
// was written with.
func (t *Table) decodeStored(ctx context.Context, v []byte) ([]row.Datum, error) {
	id, rb, err := row.SplitValue(v)
	if err != nil {
		return nil, publicError(fmt.Errorf("fluss: value: %w", err))
	}
	types, err := t.schemaTypes(ctx, id)
	if err != nil {
		return nil, err
	}
	var ds []row.Datum
	if t.info.desc.Properties.KvFormat() == metadata.KvFormatIndexed {
		ds, err = row.DecodeIndexedRow(types, rb, nil)
	} else {
		ds, err = row.DecodeCompactedRow(types, rb, nil)
	}
	if err != nil {
		return nil, publicError(fmt.Errorf("fluss: decode row of schema %d: %w", id, err))
	}
	for len(ds) < len(t.types) {
		ds = append(ds, row.Datum{Null: true})
	}
	return ds[:len(t.types)], nil
}
