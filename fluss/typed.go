package fluss

import (
	"context"
	"fmt"
	"reflect"
	"strings"
)

// Typed access: a struct type T maps to a table's columns by field tag `fluss:"column"` (or
// the field name, case-insensitively, when untagged; `fluss:"-"` skips a field). Field types
// are those of Row (pointers allowed for nullable columns). Columns without a field are
// written as NULL and ignored on read.

// structMap maps struct fields to table columns.
type structMap struct {
	typ    reflect.Type
	fields []int // struct field index for each column, -1 if none
}

// mapStruct returns the mapping of struct type T to t's columns. Mappings are cached on the
// Table (keyed by type), so they live exactly as long as the Table handle.
func mapStruct[T any](t *Table) (*structMap, error) {
	typ := reflect.TypeFor[T]()
	if m, ok := t.structMaps.Load(typ); ok {
		return m.(*structMap), nil
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("fluss: %s is not a struct type", typ)
	}
	m := &structMap{typ: typ, fields: make([]int, len(t.cols))}
	for i := range m.fields {
		m.fields[i] = -1
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("fluss")
		if name == "-" {
			continue
		}
		found := -1
		for j, c := range t.cols {
			if name != "" && c.Name == name || name == "" && strings.EqualFold(c.Name, f.Name) {
				found = j
			}
		}
		if found < 0 {
			if name != "" {
				return nil, fmt.Errorf("fluss: field %s.%s: table %s has no column %q", typ, f.Name, t.info.Path, name)
			}
			continue
		}
		m.fields[found] = i
	}
	t.structMaps.Store(typ, m)
	return m, nil
}

// toRow converts a struct to a Row.
func (m *structMap) toRow(v reflect.Value) Row {
	r := make(Row, len(m.fields))
	for col, fi := range m.fields {
		if fi < 0 {
			continue
		}
		fv := v.Field(fi)
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			continue
		}
		r[col] = fv.Interface()
	}
	return r
}

// fromRow fills a struct from a Row.
func (m *structMap) fromRow(r Row, dst reflect.Value) error {
	for col, fi := range m.fields {
		if fi < 0 || col >= len(r) {
			continue
		}
		fv := dst.Field(fi)
		if r[col] == nil {
			fv.SetZero()
			continue
		}
		val := reflect.ValueOf(r[col])
		target := fv.Type()
		if target.Kind() == reflect.Pointer {
			target = target.Elem()
		}
		if !val.Type().AssignableTo(target) {
			if !val.Type().ConvertibleTo(target) || val.Kind() == reflect.String != (target.Kind() == reflect.String) {
				return fmt.Errorf("fluss: cannot store %T in field %s.%s", r[col], m.typ, m.typ.Field(fi).Name)
			}
			val = val.Convert(target)
		}
		if fv.Kind() == reflect.Pointer {
			p := reflect.New(target)
			p.Elem().Set(val)
			fv.Set(p)
		} else {
			fv.Set(val)
		}
	}
	return nil
}

// TypedAppendWriter appends values of struct type T to a log table.
type TypedAppendWriter[T any] struct {
	*AppendWriter
	m *structMap
}

// NewTypedAppendWriter wraps w for struct type T.
func NewTypedAppendWriter[T any](t *Table, w *AppendWriter) (*TypedAppendWriter[T], error) {
	m, err := mapStruct[T](t)
	if err != nil {
		return nil, err
	}
	return &TypedAppendWriter[T]{AppendWriter: w, m: m}, nil
}

// Append appends v.
func (w *TypedAppendWriter[T]) Append(ctx context.Context, v T) (*WriteResult, error) {
	return w.AppendWriter.Append(ctx, w.m.toRow(reflect.ValueOf(v)))
}

// TypedUpsertWriter upserts and deletes values of struct type T.
type TypedUpsertWriter[T any] struct {
	*UpsertWriter
	m *structMap
}

// NewTypedUpsertWriter wraps w for struct type T.
func NewTypedUpsertWriter[T any](t *Table, w *UpsertWriter) (*TypedUpsertWriter[T], error) {
	m, err := mapStruct[T](t)
	if err != nil {
		return nil, err
	}
	return &TypedUpsertWriter[T]{UpsertWriter: w, m: m}, nil
}

// Upsert inserts or updates v.
func (w *TypedUpsertWriter[T]) Upsert(ctx context.Context, v T) (*WriteResult, error) {
	return w.UpsertWriter.Upsert(ctx, w.m.toRow(reflect.ValueOf(v)))
}

// Delete deletes the row with v's primary key.
func (w *TypedUpsertWriter[T]) Delete(ctx context.Context, v T) (*WriteResult, error) {
	return w.UpsertWriter.Delete(ctx, w.m.toRow(reflect.ValueOf(v)))
}

// TypedLookuper looks up rows as values of struct type T.
type TypedLookuper[T any] struct {
	*Lookuper
	m *structMap
}

// NewTypedLookuper wraps l for struct type T.
func NewTypedLookuper[T any](t *Table, l *Lookuper) (*TypedLookuper[T], error) {
	m, err := mapStruct[T](t)
	if err != nil {
		return nil, err
	}
	return &TypedLookuper[T]{Lookuper: l, m: m}, nil
}

// Lookup returns the row with the given primary-key values; found is false if there is none.
func (l *TypedLookuper[T]) Lookup(ctx context.Context, key ...any) (v T, found bool, err error) {
	r, err := l.Lookuper.Lookup(ctx, Row(key))
	if err != nil || r == nil {
		return v, false, err
	}
	err = l.m.fromRow(r, reflect.ValueOf(&v).Elem())
	return v, err == nil, err
}

// ScanRecordOf is a ScanRecord whose row was decoded into T.
type ScanRecordOf[T any] struct {
	Bucket     TableBucket
	Offset     int64
	Timestamp  int64
	ChangeType ChangeType
	Value      T
}

// Decode converts scanned records (read without projection) to values of struct type T.
func Decode[T any](t *Table, recs []ScanRecord) ([]ScanRecordOf[T], error) {
	m, err := mapStruct[T](t)
	if err != nil {
		return nil, err
	}
	out := make([]ScanRecordOf[T], len(recs))
	for i, r := range recs {
		out[i] = ScanRecordOf[T]{Bucket: r.Bucket, Offset: r.Offset, Timestamp: r.Timestamp, ChangeType: r.ChangeType}
		if err := m.fromRow(r.Row, reflect.ValueOf(&out[i].Value).Elem()); err != nil {
			return nil, err
		}
	}
	return out, nil
}
