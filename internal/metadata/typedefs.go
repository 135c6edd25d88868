package metadata

import (
	"fmt"
	"strconv"
	"strings"
)

// typeDef is what package metadata knows about one type root beyond its name
// (typeRootNames): its SQL spellings and how its types are parameterised. typeDefs holds one
// per root; which parameters serve which root is listed, with every other layer's entry of
// the root, in internal/typetable/table.go, from which typeroots_gen.go is generated.
type typeDef struct {
	// sql holds the SQL spellings: the first is what DataType.String writes, the others are
	// aliases the SQL parser accepts too (see ParseSQLType for their form).
	sql []string
	// params is how the root's types are parameterised.
	params *typeParams
}

// typeParams is one way of parameterising a type — none, a length, a precision, a
// precision and scale, or nested types — in every form a type takes: its SQL text, its
// JSON form (DataTypeJsonSerde), its equality, and its well-formedness. Every function is
// set; each sees only the parameters of the root it serves, never the root's name.
type typeParams struct {
	// appendSQL writes t's parameters after its SQL keyword: "(10, 2)", "<STRING>".
	appendSQL func(sb *strings.Builder, t *DataType)
	// parseSQL reads the parameters after keyword (the spelling the text used), filling in
	// the defaults of those not given.
	parseSQL func(p *sqlParser, keyword string, t *DataType) error
	// equal compares the parameters of two types of the same root.
	equal func(t, u *DataType) bool
	// writeJSON writes t's parameter fields into its JSON object.
	writeJSON func(w *jsonWriter, t *DataType)
	// readJSON reads the parameter fields of the JSON object r into t.
	readJSON func(r *typeJSON, t *DataType) error
	// check reports the first parameter of t (not of its children) Fluss's type constructors
	// reject, or "".
	check func(t *DataType) string
	// validateChildren validates t's nested types (Validate, recursively).
	validateChildren func(t *DataType) error
}

// typeDefs is indexed by TypeRoot. It is filled by init because the nested parameters call
// back into the functions that read it.
var typeDefs [LastTypeRoot + 1]typeDef

func init() { typeDefs = typeDefTable() }

// def returns r's entry; r must be valid.
func (r TypeRoot) def() *typeDef { return &typeDefs[r] }

func noChildren(*DataType) error { return nil }

func noCheck(*DataType) string { return "" }

// noParams: BOOLEAN, the numbers, STRING, BYTES, DATE.
var noParams = &typeParams{
	appendSQL:        func(*strings.Builder, *DataType) {},
	parseSQL:         func(*sqlParser, string, *DataType) error { return nil },
	equal:            func(_, _ *DataType) bool { return true },
	writeJSON:        func(*jsonWriter, *DataType) {},
	readJSON:         func(*typeJSON, *DataType) error { return nil },
	check:            noCheck,
	validateChildren: noChildren,
}

// lengthParams: CHAR(n) and BINARY(n), n ≥ 1 (default 1).
var lengthParams = &typeParams{
	appendSQL: func(sb *strings.Builder, t *DataType) { writeParams(sb, t.Length) },
	parseSQL: func(p *sqlParser, keyword string, t *DataType) error {
		t.Length = 1
		ps, err := p.params()
		switch {
		case err != nil:
			return err
		case len(ps) == 1:
			t.Length = ps[0]
		case len(ps) > 1:
			return fmt.Errorf("%s takes one parameter", keyword)
		}
		return nil
	},
	equal:     func(t, u *DataType) bool { return t.Length == u.Length },
	writeJSON: func(w *jsonWriter, t *DataType) { w.numField("length", int64(t.Length)) },
	readJSON: func(r *typeJSON, t *DataType) (err error) {
		t.Length, err = r.intParam("length")
		return err
	},
	check: func(t *DataType) string {
		if t.Length < MinLength {
			return t.Root.String() + " length must be at least 1, got " + strconv.Itoa(t.Length)
		}
		return ""
	},
	validateChildren: noChildren,
}

// decimalParams: DECIMAL(p, s), 1 ≤ p ≤ 38 (default 10), 0 ≤ s ≤ p (default 0).
var decimalParams = &typeParams{
	appendSQL: func(sb *strings.Builder, t *DataType) { writeParams(sb, t.Precision, t.Scale) },
	parseSQL: func(p *sqlParser, _ string, t *DataType) error {
		t.Precision, t.Scale = DefaultDecimalPrecision, 0
		ps, err := p.params()
		if err != nil {
			return err
		}
		switch len(ps) {
		case 0:
		case 1:
			t.Precision = ps[0]
		case 2:
			t.Precision, t.Scale = ps[0], ps[1]
		default:
			return fmt.Errorf("DECIMAL takes (precision, scale)")
		}
		return nil
	},
	equal: func(t, u *DataType) bool { return t.Precision == u.Precision && t.Scale == u.Scale },
	writeJSON: func(w *jsonWriter, t *DataType) {
		w.numField("precision", int64(t.Precision))
		w.numField("scale", int64(t.Scale))
	},
	readJSON: func(r *typeJSON, t *DataType) (err error) {
		if t.Precision, err = r.intParam("precision"); err != nil {
			return err
		}
		t.Scale, err = r.intParam("scale")
		return err
	},
	check: func(t *DataType) string {
		if t.Precision < MinDecimalPrecision || t.Precision > MaxDecimalPrecision {
			return "DECIMAL precision must be between 1 and 38 (both inclusive), got " + strconv.Itoa(t.Precision)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return "DECIMAL scale must be between 0 and the precision " + strconv.Itoa(t.Precision) +
				" (both inclusive), got " + strconv.Itoa(t.Scale)
		}
		return ""
	},
	validateChildren: noChildren,
}

// precisionParams: TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), 0 ≤ p ≤ 9, with the given
// default precision.
func precisionParams(def int) *typeParams {
	return &typeParams{
		appendSQL: func(sb *strings.Builder, t *DataType) { writeParams(sb, t.Precision) },
		parseSQL: func(p *sqlParser, keyword string, t *DataType) error {
			t.Precision = def
			ps, err := p.params()
			switch {
			case err != nil:
				return err
			case len(ps) == 1:
				t.Precision = ps[0]
			case len(ps) > 1:
				return fmt.Errorf("%s takes one parameter", keyword)
			}
			return nil
		},
		equal:     func(t, u *DataType) bool { return t.Precision == u.Precision },
		writeJSON: func(w *jsonWriter, t *DataType) { w.numField("precision", int64(t.Precision)) },
		readJSON: func(r *typeJSON, t *DataType) (err error) {
			t.Precision, err = r.intParam("precision")
			return err
		},
		check: func(t *DataType) string {
			if t.Precision < 0 || t.Precision > MaxTimePrecision {
				return t.Root.String() + " precision must be between 0 and 9 (both inclusive), got " + strconv.Itoa(t.Precision)
			}
			return ""
		},
		validateChildren: noChildren,
	}
}

// arrayParams: ARRAY<element>.
var arrayParams = &typeParams{
	appendSQL: func(sb *strings.Builder, t *DataType) {
		sb.WriteByte('<')
		appendPtrType(sb, t.Elem)
		sb.WriteByte('>')
	},
	parseSQL: func(p *sqlParser, _ string, t *DataType) (err error) {
		if err := p.expect('<'); err != nil {
			return err
		}
		if t.Elem, err = p.nested(); err != nil {
			return err
		}
		return p.expect('>')
	},
	equal:     func(t, u *DataType) bool { return ptrTypeEqual(t.Elem, u.Elem) },
	writeJSON: func(w *jsonWriter, t *DataType) { w.key("element_type"); writeTypePtr(w, t.Elem) },
	readJSON: func(r *typeJSON, t *DataType) (err error) {
		t.Elem, err = r.nested("element_type")
		return err
	},
	check: func(t *DataType) string {
		if t.Elem == nil {
			return "ARRAY without element type"
		}
		return ""
	},
	validateChildren: func(t *DataType) error { return t.Elem.Validate() },
}

// mapParams: MAP<key, value>; the key type is DataType.Elem.
var mapParams = &typeParams{
	appendSQL: func(sb *strings.Builder, t *DataType) {
		sb.WriteByte('<')
		appendPtrType(sb, t.Elem)
		sb.WriteString(", ")
		appendPtrType(sb, t.Value)
		sb.WriteByte('>')
	},
	parseSQL: func(p *sqlParser, _ string, t *DataType) (err error) {
		if err := p.expect('<'); err != nil {
			return err
		}
		if t.Elem, err = p.nested(); err != nil {
			return err
		}
		if err := p.expect(','); err != nil {
			return err
		}
		if t.Value, err = p.nested(); err != nil {
			return err
		}
		return p.expect('>')
	},
	equal: func(t, u *DataType) bool { return ptrTypeEqual(t.Elem, u.Elem) && ptrTypeEqual(t.Value, u.Value) },
	writeJSON: func(w *jsonWriter, t *DataType) {
		w.key("key_type")
		writeTypePtr(w, t.Elem)
		w.key("value_type")
		writeTypePtr(w, t.Value)
	},
	readJSON: func(r *typeJSON, t *DataType) (err error) {
		if t.Elem, err = r.nested("key_type"); err != nil {
			return err
		}
		t.Value, err = r.nested("value_type")
		return err
	},
	check: func(t *DataType) string {
		if t.Elem == nil || t.Value == nil {
			return "MAP without key or value type"
		}
		return ""
	},
	validateChildren: func(t *DataType) error {
		if err := t.Elem.Validate(); err != nil {
			return err
		}
		return t.Value.Validate()
	},
}

// rowParams: ROW<`name` type, ...>, field names unique.
var rowParams = &typeParams{
	appendSQL: func(sb *strings.Builder, t *DataType) {
		sb.WriteByte('<')
		for i := range t.Fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			f := &t.Fields[i]
			sb.WriteByte('`')
			sb.WriteString(strings.ReplaceAll(f.Name, "`", "``"))
			sb.WriteString("` ")
			f.Type.appendString(sb)
		}
		sb.WriteByte('>')
	},
	parseSQL: func(p *sqlParser, _ string, t *DataType) error {
		if err := p.expect('<'); err != nil {
			return err
		}
		for {
			name := p.word()
			if name == "" {
				return fmt.Errorf("expected a ROW field name at position %d", p.pos)
			}
			ft, err := p.nested()
			if err != nil {
				return err
			}
			t.Fields = append(t.Fields, Field{Name: name, Type: *ft, ID: -1})
			if !p.peek(',') {
				break
			}
			p.pos++
		}
		return p.expect('>')
	},
	equal: func(t, u *DataType) bool {
		if len(t.Fields) != len(u.Fields) {
			return false
		}
		for i := range t.Fields {
			a, b := &t.Fields[i], &u.Fields[i]
			if a.Name != b.Name || a.Description != b.Description || !a.Type.Equal(b.Type) {
				return false
			}
		}
		return true
	},
	writeJSON: func(w *jsonWriter, t *DataType) {
		w.key("fields")
		w.beginArray()
		for i := range t.Fields {
			f := &t.Fields[i]
			w.sep()
			w.beginObject()
			w.strField("name", f.Name)
			w.key("field_type")
			writeDataType(w, &f.Type)
			if f.Description != "" {
				w.strField("description", f.Description)
			}
			w.numField("field_id", int64(f.ID))
			w.endObject()
		}
		w.endArray()
	},
	readJSON: func(r *typeJSON, t *DataType) (err error) {
		t.Fields, err = decodeRowFields(r.obj, r.depth)
		return err
	},
	check: func(t *DataType) string {
		seen := make(map[string]struct{}, len(t.Fields))
		for i := range t.Fields {
			if _, dup := seen[t.Fields[i].Name]; dup {
				return "ROW field names must be unique, found duplicate " + strconv.Quote(t.Fields[i].Name)
			}
			seen[t.Fields[i].Name] = struct{}{}
		}
		return ""
	},
	validateChildren: func(t *DataType) error {
		for i := range t.Fields {
			if err := t.Fields[i].Type.Validate(); err != nil {
				return err
			}
		}
		return nil
	},
}

// writeParams writes "(a)" or "(a, b)".
func writeParams(sb *strings.Builder, ns ...int) {
	sb.WriteByte('(')
	for i, n := range ns {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(n))
	}
	sb.WriteByte(')')
}
