package kvstore

import (
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Table describes the primary-key table a Tablet stores.
type Table struct {
	ID int64
	// SchemaID and Schema are the latest schema: changelog rows and merged values use it.
	SchemaID int16
	Schema   metadata.Schema
	// PartitionKeys are excluded from the key encoding (the physical primary key).
	PartitionKeys []string
	// BucketKeys are the table's bucket key columns (empty: the physical primary key).
	BucketKeys []string
	Config     metadata.TableConfig
	// SchemaByID returns older schema versions, for values written before a schema change.
	// nil means only the latest schema exists.
	SchemaByID func(id int16) (metadata.Schema, bool)
}

// TableFromDescriptor builds a Table from a stored descriptor and its latest schema id.
func TableFromDescriptor(id int64, schemaID int16, d *metadata.TableDescriptor, schemaByID func(int16) (metadata.Schema, bool)) Table {
	return Table{ID: id, SchemaID: schemaID, Schema: d.Schema, PartitionKeys: d.PartitionKeys,
		BucketKeys: d.BucketKeys, Config: d.Properties.Config(), SchemaByID: schemaByID}
}

// compiled is the derived, immutable form of a Table that the hot paths use.
type compiled struct {
	Table
	cols     []metadata.Column
	types    []metadata.DataType // latest schema
	pk       []int               // primary-key column positions (latest schema)
	pkSet    row.ColumnSet
	keyCols  []int // physical primary key positions, in key order
	keyTypes []metadata.DataType
	arrow    *arrow.Schema
	compress arrowlog.Compression
	aggs     []aggFunc // aggregation merge engine: one per column
	verCol   int       // versioned merge engine: version column position
	autoInc  autoInc   // the auto-increment column (autoinc.go); col < 0 when none
	// compactedKeys is set when clients encode primary keys with the compacted encoding,
	// the one encodeKey produces (every table without a lake key encoder). Only then can the
	// server check a KV record's key against its row.
	compactedKeys bool
	// icebergKeys is set when clients encode primary keys with Iceberg's key encoder
	// (table.datalake.format iceberg); encodeKey then produces the same bytes, so recovery
	// from the changelog stores rows under the keys clients look up.
	icebergKeys bool
	// paimonKeys is set when clients encode primary keys with Paimon's key encoder
	// (table.datalake.format paimon, row.EncodePaimonKey); encodeKey then produces the same
	// bytes, as for icebergKeys.
	paimonKeys bool

	mu      sync.Mutex
	schemas map[int16][]metadata.DataType // older schema field types, by id
	arrows  map[int16]*arrowSchemaOf
}

// arrowSchemaOf caches the Arrow schema of an older schema version (recovery decodes
// changelog batches written under it).
type arrowSchemaOf struct {
	cols   []metadata.Column
	schema *arrow.Schema
}

func compile(t Table) (*compiled, error) {
	c := &compiled{Table: t, cols: t.Schema.Columns, schemas: map[int16][]metadata.DataType{}, arrows: map[int16]*arrowSchemaOf{}}
	c.types = make([]metadata.DataType, len(c.cols))
	for i, col := range c.cols {
		c.types[i] = col.Type
	}
	c.pk = t.Schema.PrimaryKeyIndexes()
	if len(c.pk) == 0 {
		return nil, fmt.Errorf("kvstore: table %d has no primary key", t.ID)
	}
	for _, i := range c.pk {
		if i < 0 {
			return nil, fmt.Errorf("kvstore: table %d: primary key column missing from schema", t.ID)
		}
	}
	c.pkSet = row.NewColumnSet(c.pk...)
	for _, name := range t.Schema.PrimaryKey {
		partition := false
		for _, p := range t.PartitionKeys {
			partition = partition || p == name
		}
		if !partition {
			i := t.Schema.ColumnIndex(name)
			c.keyCols = append(c.keyCols, i)
			c.keyTypes = append(c.keyTypes, c.types[i])
		}
	}
	// The bucket key equals the physical key unless the table names another one; a bucket key
	// that differs only matters for kv format version 2 with a lake format.
	enc, err := row.PrimaryKeyEncoding(t.Config.KvFormatVersion, t.Config.DataLakeFormat, len(t.BucketKeys) == 0 || slices.Equal(t.BucketKeys, physicalKey(t)))
	c.compactedKeys = err == nil && enc == row.KeyCompacted
	c.icebergKeys = err == nil && enc == row.KeyIceberg
	c.paimonKeys = err == nil && enc == row.KeyPaimon
	as, err := arrowlog.ArrowSchema(c.cols)
	if err != nil {
		return nil, fmt.Errorf("kvstore: arrow schema: %w", err)
	}
	c.arrow = as
	c.arrows[t.SchemaID] = &arrowSchemaOf{cols: c.cols, schema: as}
	switch t.Config.Compression {
	case metadata.CompressionNone:
		c.compress = arrowlog.CompressionNone
	case metadata.CompressionLZ4Frame:
		c.compress = arrowlog.CompressionLZ4Frame
	default:
		c.compress = arrowlog.CompressionZstd
	}
	c.schemas[t.SchemaID] = c.types
	if c.autoInc, err = compileAutoInc(t); err != nil {
		return nil, err
	}
	switch t.Config.MergeEngine {
	case metadata.MergeEngineAggregation:
		c.aggs = make([]aggFunc, len(c.cols))
		for i, col := range c.cols {
			name, delim := metadata.AggLastValueIgnoreNulls, ","
			if c.pkSet.Has(i) {
				name = metadata.AggLastValue
			} else if col.AggFunction != nil {
				name = col.AggFunction.Type
				if d, ok := col.AggFunction.Parameters[metadata.AggParamDelimiter]; ok {
					delim = d
				}
			}
			f, err := newAggFunc(name, col.Type, delim, t.Config.LogFormat == metadata.LogFormatArrow)
			if err != nil {
				return nil, fmt.Errorf("kvstore: column %q: %w", col.Name, err)
			}
			c.aggs[i] = f
		}
	case metadata.MergeEngineVersioned:
		c.verCol = t.Schema.ColumnIndex(t.Config.VersionColumn)
		if c.verCol < 0 {
			return nil, fmt.Errorf("kvstore: the version column %q for versioned merge engine doesn't exist in schema", t.Config.VersionColumn)
		}
		switch c.types[c.verCol].Root {
		case metadata.Int, metadata.BigInt, metadata.Timestamp, metadata.TimestampLTZ:
		default:
			return nil, fmt.Errorf("kvstore: the version column %q for versioned merge engine must be one type of [INT, BIGINT, TIMESTAMP, TIMESTAMP_LTZ], but is %s",
				t.Config.VersionColumn, c.types[c.verCol])
		}
	}
	return c, nil
}

// physicalKey is the primary key without the partition columns.
func physicalKey(t Table) []string {
	var out []string
	for _, name := range t.Schema.PrimaryKey {
		partition := false
		for _, p := range t.PartitionKeys {
			partition = partition || p == name
		}
		if !partition {
			out = append(out, name)
		}
	}
	return out
}

// typesOf returns the field types of schema version id.
func (c *compiled) typesOf(id int16) ([]metadata.DataType, error) {
	if id == c.SchemaID {
		return c.types, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts, ok := c.schemas[id]; ok {
		return ts, nil
	}
	s, err := c.schemaOf(id)
	if err != nil {
		return nil, err
	}
	ts := make([]metadata.DataType, len(s.Columns))
	for i, col := range s.Columns {
		ts[i] = col.Type
	}
	c.schemas[id] = ts
	return ts, nil
}

func (c *compiled) schemaOf(id int16) (metadata.Schema, error) {
	if c.SchemaByID != nil {
		if s, ok := c.SchemaByID(id); ok {
			return s, nil
		}
	}
	return metadata.Schema{}, ferr.New(ferr.SchemaNotExist, "Invalid schema id: %d, latest schema id: %d", id, c.SchemaID)
}

// arrowOf returns the columns and Arrow schema of schema version id.
func (c *compiled) arrowOf(id int16) (*arrowSchemaOf, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.arrows[id]; ok {
		return a, nil
	}
	s, err := c.schemaOf(id)
	if err != nil {
		return nil, err
	}
	as, err := arrowlog.ArrowSchema(s.Columns)
	if err != nil {
		return nil, err
	}
	a := &arrowSchemaOf{cols: s.Columns, schema: as}
	c.arrows[id] = a
	return a, nil
}

// decodeRow decodes row bytes in the table's KV format under schema version id into dst.
func (c *compiled) decodeRow(id int16, buf []byte, dst []row.Datum) ([]row.Datum, error) {
	ts, err := c.typesOf(id)
	if err != nil {
		return dst[:0], err
	}
	if c.Config.KvFormat == metadata.KvFormatIndexed {
		return row.DecodeIndexedRow(ts, buf, dst)
	}
	return row.DecodeCompactedRow(ts, buf, dst)
}

// encodeValue appends the stored value of r (latest schema) to dst.
func (c *compiled) encodeValue(dst []byte, r []row.Datum) ([]byte, error) {
	return c.encodeValueAs(dst, c.SchemaID, c.types, r)
}

func (c *compiled) encodeValueAs(dst []byte, id int16, types []metadata.DataType, r []row.Datum) ([]byte, error) {
	dst = row.AppendValue(dst, id, nil)
	if c.Config.KvFormat == metadata.KvFormatIndexed {
		return row.AppendIndexedRow(dst, types, r)
	}
	return row.AppendCompactedRow(dst, types, r)
}

// encodeKey appends the key of r (a row of the given schema's columns, which must contain
// the key columns at their latest positions) to dst.
func (c *compiled) encodeKey(dst []byte, r []row.Datum, scratch []row.Datum) ([]byte, []row.Datum, error) {
	scratch = scratch[:0]
	for _, i := range c.keyCols {
		if i >= len(r) {
			return dst, scratch, ferr.New(ferr.CorruptRecordException, "row of %d fields has no key column %d", len(r), i)
		}
		scratch = append(scratch, r[i])
	}
	if c.icebergKeys {
		out, err := row.EncodeIcebergKey(dst, c.keyTypes, scratch)
		return out, scratch, err
	}
	if c.paimonKeys {
		out, err := row.EncodePaimonKey(dst, c.keyTypes, scratch)
		return out, scratch, err
	}
	out, err := row.EncodeKey(dst, c.keyTypes, scratch)
	return out, scratch, err
}

// pad extends r with NULLs to the latest schema's width (rows of older schemas).
func (c *compiled) pad(r []row.Datum) []row.Datum {
	for len(r) < len(c.types) {
		r = append(r, row.NullDatum)
	}
	return r
}
