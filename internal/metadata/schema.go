package metadata

import (
	"fmt"
	"slices"
	"strings"
)

// UnknownID is the column/field id of a column or ROW field whose id has not been assigned.
const UnknownID int32 = -1

// ColumnIndex returns the position of the column called name, or -1.
func (s Schema) ColumnIndex(name string) int {
	for i := range s.Columns {
		if s.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// Column returns the column called name, or nil.
func (s Schema) Column(name string) *Column {
	if i := s.ColumnIndex(name); i >= 0 {
		return &s.Columns[i]
	}
	return nil
}

// ColumnNames returns the column names in order.
func (s Schema) ColumnNames() []string {
	names := make([]string, len(s.Columns))
	for i := range s.Columns {
		names[i] = s.Columns[i].Name
	}
	return names
}

// HasPrimaryKey reports whether the schema declares a primary key.
func (s Schema) HasPrimaryKey() bool { return len(s.PrimaryKey) > 0 }

// PrimaryKeyIndexes returns the column positions of the primary-key columns in key order
// (empty for log tables). Names that do not resolve are reported as -1; a normalised schema
// has none.
func (s Schema) PrimaryKeyIndexes() []int { return s.ColumnIndexes(s.PrimaryKey) }

// ColumnIndexes maps names to column positions (-1 for unknown names).
func (s Schema) ColumnIndexes(names []string) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = s.ColumnIndex(n)
	}
	return out
}

// RowType returns the schema's columns as a ROW type (NOT NULL is not applied to the row),
// with column ids as field ids and comments as descriptions.
func (s Schema) RowType() DataType {
	fields := make([]Field, len(s.Columns))
	for i := range s.Columns {
		c := &s.Columns[i]
		fields[i] = Field{Name: c.Name, Type: c.Type, Description: c.Comment, ID: c.ID}
	}
	return DataType{Root: Row, Fields: fields}
}

// AssignFieldIDs gives every column and every nested ROW field a fresh id, pre-order: each
// column takes the next id and then its nested ROW fields (at any depth inside ARRAY, MAP and
// ROW) take the following ones, before the next column. HighestFieldID becomes the last id
// used. This is what Java's Schema.Builder.column does; use it on programmatically built
// schemas whose ids are not meaningful yet.
func (s *Schema) AssignFieldIDs() {
	next := int32(-1)
	for i := range s.Columns {
		next++
		s.Columns[i].ID = next
		reassignNestedIDs(&s.Columns[i].Type, &next, false)
	}
	s.HighestFieldID = next
}

// reassignNestedIDs numbers the ROW fields inside t pre-order from *next+1. With onlyUnknown
// set, fields that already have an id keep it.
func reassignNestedIDs(t *DataType, next *int32, onlyUnknown bool) {
	switch t.Root {
	case Array:
		if t.Elem != nil {
			t.Elem = cloneType(t.Elem)
			reassignNestedIDs(t.Elem, next, onlyUnknown)
		}
	case Map:
		if t.Elem != nil {
			t.Elem = cloneType(t.Elem)
			reassignNestedIDs(t.Elem, next, onlyUnknown)
		}
		if t.Value != nil {
			t.Value = cloneType(t.Value)
			reassignNestedIDs(t.Value, next, onlyUnknown)
		}
	case Row:
		t.Fields = slices.Clone(t.Fields)
		for i := range t.Fields {
			f := &t.Fields[i]
			if !onlyUnknown || f.ID == UnknownID {
				*next++
				f.ID = *next
			}
			reassignNestedIDs(&f.Type, next, onlyUnknown)
		}
	}
}

// cloneType copies t shallowly so that renumbering never writes through shared pointers.
func cloneType(t *DataType) *DataType {
	c := *t
	return &c
}

// collectFieldIDs appends the column id and all nested ROW field ids of c, pre-order.
func collectFieldIDs(t *DataType, ids []int32) []int32 {
	switch t.Root {
	case Array:
		if t.Elem != nil {
			ids = collectFieldIDs(t.Elem, ids)
		}
	case Map:
		if t.Elem != nil {
			ids = collectFieldIDs(t.Elem, ids)
		}
		if t.Value != nil {
			ids = collectFieldIDs(t.Value, ids)
		}
	case Row:
		for i := range t.Fields {
			ids = append(ids, t.Fields[i].ID)
			ids = collectFieldIDs(&t.Fields[i].Type, ids)
		}
	}
	return ids
}

// Normalize checks s the way Java's Schema constructor does and applies its normalisation:
//
//   - column ids are all set or all unknown (-1); unknown ones are assigned pre-order as by
//     AssignFieldIDs; nested ROW fields without ids get fresh ids above every id in use;
//   - all ids (columns and nested fields) are unique and non-negative, and HighestFieldID is at
//     least the largest (hasHighest=false means "derive it");
//   - column names are unique, data types are well-formed;
//   - the primary key is non-empty if present, has no duplicates and names existing columns;
//     its columns become NOT NULL;
//   - at most one auto-increment column, only in primary-key tables, an existing INT/BIGINT
//     column outside the primary key;
//   - aggregate functions are not set on primary-key columns.
//
// Errors are plain errors; the caller decides the Fluss code (15 on CREATE_TABLE).
func (s *Schema) Normalize(hasHighest bool) error {
	for i := range s.Columns {
		if err := s.Columns[i].Type.Validate(); err != nil {
			return fmt.Errorf("Column %q: %w", s.Columns[i].Name, err)
		}
	}
	if err := s.normalizeIDs(hasHighest); err != nil {
		return err
	}

	names := make(map[string]struct{}, len(s.Columns))
	var dups []string
	for i := range s.Columns {
		n := s.Columns[i].Name
		if _, ok := names[n]; ok && !slices.Contains(dups, n) {
			dups = append(dups, n)
		}
		names[n] = struct{}{}
	}
	if len(dups) > 0 {
		return fmt.Errorf("Table column %s must not contain duplicate fields. Found: %s",
			listString(s.ColumnNames()), listString(dups))
	}

	if len(s.PrimaryKey) == 0 {
		if len(s.AutoIncrement) > 0 {
			return fmt.Errorf("Auto increment column can only be used in primary-key table.")
		}
		return nil
	}
	pk := make(map[string]struct{}, len(s.PrimaryKey))
	for _, n := range s.PrimaryKey {
		if _, dup := pk[n]; dup {
			return fmt.Errorf("Primary key constraint %s must not contain duplicate columns. Found: %s",
				listString(s.PrimaryKey), n)
		}
		pk[n] = struct{}{}
	}
	for _, n := range s.PrimaryKey {
		if _, ok := names[n]; !ok {
			return fmt.Errorf("Table column %s should include all primary key constraint %s",
				listString(s.ColumnNames()), listString(s.PrimaryKey))
		}
	}
	if len(s.AutoIncrement) > 1 {
		return fmt.Errorf("Multiple auto increment columns are not supported yet.")
	}
	for _, n := range s.AutoIncrement {
		c := s.Column(n)
		if c == nil {
			return fmt.Errorf("Auto increment column %s does not exist in table columns %s.",
				n, listString(s.ColumnNames()))
		}
		if _, ok := pk[n]; ok {
			return fmt.Errorf("Auto increment column can not be used as the primary key.")
		}
		if c.Type.Root != Int && c.Type.Root != BigInt {
			return fmt.Errorf("The data type of auto increment column must be INT or BIGINT.")
		}
	}
	for i := range s.Columns {
		c := &s.Columns[i]
		_, isPK := pk[c.Name]
		if isPK && c.AggFunction != nil {
			return fmt.Errorf("Cannot set aggregation function for primary key column '%s'. "+
				"Primary key columns automatically use 'primary-key' aggregation.", c.Name)
		}
		if isPK {
			c.Type.NotNull = true
		}
	}
	return nil
}

func (s *Schema) normalizeIDs(hasHighest bool) error {
	withID := 0
	for i := range s.Columns {
		if s.Columns[i].ID != UnknownID {
			withID++
		}
	}
	switch {
	case withID == 0:
		given := s.HighestFieldID
		s.AssignFieldIDs()
		if hasHighest {
			if given < s.HighestFieldID {
				return fmt.Errorf("Highest field ID (%d) must be greater than or equal to the maximum field ID (%d) including nested fields.",
					given, s.HighestFieldID)
			}
			s.HighestFieldID = given
		}
		return nil
	case withID != len(s.Columns):
		return fmt.Errorf("All columns must have columnId or none of them must have columnId.")
	}

	var ids []int32
	for i := range s.Columns {
		ids = append(ids, s.Columns[i].ID)
		ids = collectFieldIDs(&s.Columns[i].Type, ids)
	}
	maxID := int32(-1)
	unknownNested := false
	for _, id := range ids {
		if id == UnknownID {
			unknownNested = true
		}
		maxID = max(maxID, id)
	}
	if unknownNested {
		// Columns carry ids but some nested fields do not: give those fresh ids above
		// everything in use so the stored schema is complete (the Rust client rejects
		// schemas with unassigned nested ids).
		next := maxID
		if hasHighest {
			next = max(next, s.HighestFieldID)
		}
		for i := range s.Columns {
			reassignNestedIDs(&s.Columns[i].Type, &next, true)
		}
		ids = ids[:0]
		for i := range s.Columns {
			ids = append(ids, s.Columns[i].ID)
			ids = collectFieldIDs(&s.Columns[i].Type, ids)
		}
		maxID = next
	}
	seen := make(map[int32]struct{}, len(ids))
	for _, id := range ids {
		if id < 0 {
			return fmt.Errorf("Field IDs must be non-negative, found %d.", id)
		}
		if _, dup := seen[id]; dup {
			return fmt.Errorf("All field IDs (including nested fields) must be unique, found %d twice.", id)
		}
		seen[id] = struct{}{}
	}
	if !hasHighest {
		s.HighestFieldID = maxID
	} else if s.HighestFieldID < maxID {
		return fmt.Errorf("Highest field ID (%d) must be greater than or equal to the maximum field ID (%d) including nested fields.",
			s.HighestFieldID, maxID)
	}
	return nil
}

// listString renders names like Java's List.toString: [a, b].
func listString(names []string) string {
	return "[" + strings.Join(names, ", ") + "]"
}

// Clone returns a deep copy of s (types are shared only where immutable by convention).
func (s Schema) Clone() Schema {
	c := Schema{
		Columns:        slices.Clone(s.Columns),
		PrimaryKey:     slices.Clone(s.PrimaryKey),
		AutoIncrement:  slices.Clone(s.AutoIncrement),
		HighestFieldID: s.HighestFieldID,
	}
	for i := range c.Columns {
		if af := c.Columns[i].AggFunction; af != nil {
			cp := *af
			cp.Parameters = cloneMap(af.Parameters)
			c.Columns[i].AggFunction = &cp
		}
	}
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
