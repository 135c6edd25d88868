package fluss

import (
	"context"
	"fmt"
	"slices"

	"github.com/stromdb/strom/internal/row"
)

// LookupBuilder configures point or prefix lookups on a primary-key table.
type LookupBuilder struct {
	t      *Table
	by     []string
	insert bool
}

// NewLookup starts configuring lookups (primary-key tables only).
func (t *Table) NewLookup() *LookupBuilder { return &LookupBuilder{t: t} }

// LookupBy selects the columns of a prefix lookup: the partition keys (if any) and the
// bucket key, which must be a strict prefix of the primary key without partition keys.
func (b *LookupBuilder) LookupBy(columns ...string) *LookupBuilder {
	b.by = columns
	return b
}

// InsertIfNotExists makes the point lookups of the Lookuper insert every key they do not
// find — a row holding just the key, its other columns null — and return that row, so every
// lookup returns a row (Fluss's LOOKUP insert_if_not_exists; the Java client's
// Lookup.insertIfNotExists). The insert is a write: it goes through the table's changelog and
// is acknowledged by the in-sync replicas before the lookup returns. Tables with a NOT NULL
// column outside the primary key refuse it when a key is missing. Not for prefix lookups.
func (b *LookupBuilder) InsertIfNotExists() *LookupBuilder {
	b.insert = true
	return b
}

// CreateLookuper returns a primary-key lookuper.
func (b *LookupBuilder) CreateLookuper() (*Lookuper, error) {
	t := b.t
	if !t.HasPrimaryKey() {
		return nil, newError(ErrNonPrimaryKeyTable, "table %s has no primary key", t.info.Path)
	}
	if b.by != nil && !slices.Equal(b.by, t.info.PrimaryKeys()) {
		return nil, fmt.Errorf("fluss: lookup columns %v are not the primary key %v: use CreatePrefixLookuper", b.by, t.info.PrimaryKeys())
	}
	if err := t.checkKeyEncoding(); err != nil {
		return nil, err
	}
	return &Lookuper{t: t, insert: b.insert}, nil
}

// CreatePrefixLookuper returns a lookuper for the LookupBy columns.
func (b *LookupBuilder) CreatePrefixLookuper() (*PrefixLookuper, error) {
	t := b.t
	if !t.HasPrimaryKey() {
		return nil, newError(ErrNonPrimaryKeyTable, "table %s has no primary key", t.info.Path)
	}
	if b.insert {
		return nil, fmt.Errorf("fluss: InsertIfNotExists applies to point lookups only")
	}
	if err := t.checkKeyEncoding(); err != nil {
		return nil, err
	}
	by := t.info.desc.Schema.ColumnIndexes(b.by)
	if len(by) != len(b.by) || len(b.by) == 0 {
		return nil, fmt.Errorf("fluss: unknown or empty lookup columns %v", b.by)
	}
	want := append(slices.Clone(t.partKeys), t.bucketKey...)
	if !sameSet(by, want) {
		return nil, fmt.Errorf("fluss: prefix lookup columns must be the partition keys and bucket keys %v", pick(t.info.ColumnNames(), want))
	}
	if len(t.bucketKey) >= len(t.physPK) || !slices.Equal(t.physPK[:len(t.bucketKey)], t.bucketKey) {
		return nil, fmt.Errorf("fluss: the bucket key of %s is not a strict prefix of its primary key", t.info.Path)
	}
	return &PrefixLookuper{t: t, by: by}, nil
}

func sameSet(a, b []int) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// Lookuper looks rows up by primary key. Safe for concurrent use: concurrent lookups of a
// table (from any of its Lookupers) are merged into one LOOKUP request per tablet server,
// see Config.LookupMaxBatchSize and Config.LookupMaxInflightRequests.
type Lookuper struct {
	t      *Table
	insert bool // InsertIfNotExists
}

// Lookup returns the row with the given primary key (values of the primary-key columns in
// primary-key order), or nil if there is none.
func (l *Lookuper) Lookup(ctx context.Context, key Row) (Row, error) {
	t := l.t
	vals, err := keyRow(t, t.pk, key)
	if err != nil {
		return nil, err
	}
	kb, err := t.encodeKey(nil, t.physPK, vals)
	if err != nil {
		return nil, fmt.Errorf("fluss: primary key: %w", err)
	}
	bkey := kb
	if !sameCols(t.bucketKey, t.physPK) {
		if bkey, err = t.encodeKey(nil, t.bucketKey, vals); err != nil {
			return nil, err
		}
	}
	var value []byte
	err = lookupRetry(ctx, t, vals, bkey, func(leader ServerNode, tb TableBucket) (ErrorCode, string, error) {
		v, code, msg, err := t.lookups.lookup(ctx, leader, tb, kb, l.insert)
		value = v
		return code, msg, err
	})
	if err != nil {
		return nil, err
	}
	if value == nil {
		return nil, nil
	}
	return t.decodeValue(ctx, value)
}

// PrefixLookuper returns all rows whose primary key starts with given bucket-key values. Safe
// for concurrent use; concurrent prefix lookups are merged like point lookups (see Lookuper).
type PrefixLookuper struct {
	t  *Table
	by []int // column indexes of the lookup columns, in the caller's order
}

// Lookup returns the rows matching prefix (values of the LookupBy columns, in that order).
func (l *PrefixLookuper) Lookup(ctx context.Context, prefix Row) ([]Row, error) {
	t := l.t
	vals, err := keyRow(t, l.by, prefix)
	if err != nil {
		return nil, err
	}
	kb, err := t.encodeKey(nil, t.bucketKey, vals)
	if err != nil {
		return nil, fmt.Errorf("fluss: prefix key: %w", err)
	}
	var values [][]byte
	err = lookupRetry(ctx, t, vals, kb, func(leader ServerNode, tb TableBucket) (ErrorCode, string, error) {
		vs, code, msg, err := t.lookups.prefixLookup(ctx, leader, tb, kb)
		values = vs
		return code, msg, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Row, 0, len(values))
	for _, v := range values {
		r, err := t.decodeValue(ctx, v)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// keyRow places key values (for the columns idx) into a full-width datum row.
func keyRow(t *Table, idx []int, key Row) ([]row.Datum, error) {
	if len(key) != len(idx) {
		return nil, fmt.Errorf("fluss: key has %d values, want %d (%v)", len(key), len(idx), pick(t.info.ColumnNames(), idx))
	}
	vals := make([]row.Datum, len(t.cols))
	for i := range vals {
		vals[i] = row.NullDatum
	}
	for i, j := range idx {
		d, err := toDatum(t.types[j], key[i])
		if err != nil {
			return nil, fmt.Errorf("fluss: key column %s: %w", t.cols[j].Name, err)
		}
		if d.Null {
			return nil, fmt.Errorf("fluss: key column %s is NULL", t.cols[j].Name)
		}
		vals[j] = d
	}
	return vals, nil
}

// lookupRetry routes a lookup to its bucket's leader and retries retriable failures.
func lookupRetry(ctx context.Context, t *Table, vals []row.Datum, bucketKey []byte, do func(ServerNode, TableBucket) (ErrorCode, string, error)) error {
	bucket, err := t.bucketOfKey(bucketKey)
	if err != nil {
		return err
	}
	partID := NoPartition
	if len(t.partKeys) > 0 {
		name, err := t.partitionName(vals)
		if err != nil {
			return err
		}
		if partID, err = t.conn.meta.resolvePartition(ctx, t.info, name); err != nil {
			return err
		}
	}
	tb := TableBucket{t.info.TableID, partID, bucket}
	for attempt := 0; ; attempt++ {
		leader, err := t.conn.meta.leader(ctx, t.info.Path, tb)
		var code ErrorCode
		var msg string
		if err == nil {
			code, msg, err = do(leader, tb)
		}
		if err != nil {
			code, msg = CodeOf(err), err.Error()
			if code != ErrNetworkException && !code.Retriable() {
				return err
			}
		}
		if code == 0 {
			return nil
		}
		if isRoutingError(code) {
			t.conn.meta.invalidate(tb.TableID, tb.PartitionID)
		}
		if code == ErrPartitionNotExists {
			t.conn.meta.forgetPartition(tb.TableID, tb.PartitionID)
		}
		if !code.Retriable() || attempt >= 10 {
			return &Error{Code: code, Message: msg}
		}
		if err := t.conn.backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// decodeValue decodes a stored value ([int16 schema id][row]) to a Row.
func (t *Table) decodeValue(ctx context.Context, v []byte) (Row, error) {
	ds, err := t.decodeStored(ctx, v)
	if err != nil {
		return nil, err
	}
	return fromDatums(t.cols, ds), nil
}
