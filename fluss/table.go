package fluss

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// Table is a handle for reading and writing one table, obtained from Connection.Table. It
// holds the table's metadata as of that call.
type Table struct {
	conn *Connection
	info *TableInfo

	cols        []metadata.Column
	types       []metadata.DataType
	arrowSchema *arrow.Schema

	pk        []int // primary-key column indexes
	physPK    []int // primary key minus partition keys (the key bytes' columns)
	bucketKey []int // bucket-key column indexes
	partKeys  []int // partition-key column indexes

	bucketFn row.BucketingFunction

	structMaps sync.Map // reflect.Type -> *structMap, for the typed API
	schemas    sync.Map // int16 schema id -> []metadata.DataType, other schemas' values (schema_versions.go)
	lookups    *lookupBatcher
}

func newTable(c *Connection, info *TableInfo) (*Table, error) {
	t := &Table{conn: c, info: info, cols: info.columns()}
	t.lookups = newLookupBatcher(t)
	for _, col := range t.cols {
		t.types = append(t.types, col.Type)
	}
	d := &info.desc
	t.pk = d.Schema.PrimaryKeyIndexes()
	t.physPK = d.Schema.ColumnIndexes(d.PhysicalPrimaryKey())
	t.bucketKey = d.BucketKeyIndexes()
	t.partKeys = d.PartitionKeyIndexes()
	var err error
	if t.arrowSchema, err = arrowlog.ArrowSchema(t.cols); err != nil {
		return nil, fmt.Errorf("fluss: table %s: %w", info.Path, err)
	}
	return t, nil
}

// Info returns the table's metadata.
func (t *Table) Info() *TableInfo { return t.info }

// Path returns the table's path.
func (t *Table) Path() TablePath { return t.info.Path }

// HasPrimaryKey reports whether the table is a primary-key table.
func (t *Table) HasPrimaryKey() bool { return len(t.pk) > 0 }

// ArrowSchema returns the Arrow schema of the table's rows, as used by AppendRecord and the
// Arrow scanners.
func (t *Table) ArrowSchema() *arrow.Schema { return t.arrowSchema }

// checkKeyEncoding fails for lake formats whose key encodings this client lacks.
func (t *Table) checkKeyEncoding() error {
	lake := t.info.desc.Properties.DataLakeFormat()
	switch lake {
	case row.LakeNone, "lance":
	default:
		return fmt.Errorf("fluss: table %s: key encoding for datalake format %q is not supported by this client", t.info.Path, lake)
	}
	if t.bucketFn == nil {
		fn, err := row.BucketingFor(lake)
		if err != nil {
			return fmt.Errorf("fluss: table %s: %w", t.info.Path, err)
		}
		t.bucketFn = fn
	}
	return nil
}

func pick[T any](all []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = all[j]
	}
	return out
}

// encodeKey appends the compacted encoding of the columns idx of vals.
func (t *Table) encodeKey(dst []byte, idx []int, vals []row.Datum) ([]byte, error) {
	ds := pick(vals, idx)
	ts := pick(t.types, idx)
	return row.EncodeKey(dst, ts, ds)
}

// bucketOfKey returns the bucket for bucket-key bytes.
func (t *Table) bucketOfKey(key []byte) (int32, error) {
	return t.bucketFn(key, t.info.NumBuckets())
}

// sameCols reports whether a and b list the same columns in order.
func sameCols(a, b []int) bool { return slices.Equal(a, b) }

// partitionName formats the partition of a full row (docs/encodings.md §12).
func (t *Table) partitionName(vals []row.Datum) (string, error) {
	values, err := t.partitionValues(vals)
	if err != nil {
		return "", err
	}
	return metadata.PartitionName(values), nil
}

// partitionValues returns the partition-key values of a full row as partition spec strings,
// in partition-key order.
func (t *Table) partitionValues(vals []row.Datum) ([]string, error) {
	values := make([]string, len(t.partKeys))
	for i, j := range t.partKeys {
		if vals[j].Null {
			return nil, fmt.Errorf("fluss: partition column %s is NULL", t.cols[j].Name)
		}
		s, err := partitionValueString(t.types[j], &vals[j])
		if err != nil {
			return nil, fmt.Errorf("fluss: partition column %s: %w", t.cols[j].Name, err)
		}
		values[i] = s
	}
	return values, nil
}

// randomBucket returns a random bucket id.
func (t *Table) randomBucket() int32 { return rand.Int32N(max(t.info.NumBuckets(), 1)) }
