package fluss

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
	lake := t.info.desc.DataLakeFormat()
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

// partitionName formats the partition of a full row (docs/formats.md §12).
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

// partitionValueString formats one partition value as Java's PartitionUtils does.
func partitionValueString(ty metadata.DataType, d *row.Datum) (string, error) {
	switch ty.Root {
	case metadata.Char, metadata.String:
		return string(d.B), nil
	case metadata.Boolean:
		return strconv.FormatBool(d.I != 0), nil
	case metadata.TinyInt, metadata.SmallInt, metadata.Int, metadata.BigInt:
		return strconv.FormatInt(d.I, 10), nil
	case metadata.Binary, metadata.Bytes:
		return hex.EncodeToString(d.B), nil
	case metadata.Date:
		return time.Unix(d.I*86400, 0).UTC().Format("2006-01-02"), nil
	case metadata.Time:
		ms := d.I
		return fmt.Sprintf("%02d-%02d-%02d_%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000), nil
	case metadata.Float, metadata.Double:
		f := d.F
		switch {
		case math.IsNaN(f):
			return "NaN", nil
		case math.IsInf(f, 1):
			return "Inf", nil
		case math.IsInf(f, -1):
			return "-Inf", nil
		}
		bits := 64
		if ty.Root == metadata.Float {
			bits = 32
		}
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return strings.ReplaceAll(s, ".", "_"), nil
	case metadata.Timestamp, metadata.TimestampLTZ:
		ts := time.UnixMilli(d.I).Add(time.Duration(d.Nanos)).UTC()
		frac := strings.TrimRight(fmt.Sprintf("%09d", ts.Nanosecond()), "0")
		return ts.Format("2006-01-02-15-04-05") + "_" + frac, nil
	}
	return "", fmt.Errorf("type %s cannot be a partition key", ty)
}

// randomBucket returns a random bucket id.
func (t *Table) randomBucket() int32 { return rand.Int32N(max(t.info.NumBuckets(), 1)) }
