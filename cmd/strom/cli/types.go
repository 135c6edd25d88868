package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/metadata"
)

// ParseType parses a Fluss type in its SQL form, as DataType.String renders it and as Flink
// SQL writes it: INT, BIGINT NOT NULL, DECIMAL(10, 2), TIMESTAMP(3), TIMESTAMP_LTZ(6),
// CHAR(4), ARRAY<STRING>, MAP<STRING, INT>, ROW<a INT, b STRING>. Names are case-insensitive;
// INTEGER, VARCHAR (= STRING), VARBINARY (= BYTES), NUMERIC/DEC and TIMESTAMP WITH LOCAL TIME
// ZONE are accepted as aliases.
func ParseType(s string) (fluss.DataType, error) {
	p := &typeParser{src: s}
	t, err := p.parse()
	if err != nil {
		return fluss.DataType{}, fmt.Errorf("type %q: %w", s, err)
	}
	if p.skipSpace(); p.pos < len(p.src) {
		return fluss.DataType{}, fmt.Errorf("type %q: unexpected %q", s, p.src[p.pos:])
	}
	if err := t.Validate(); err != nil {
		return fluss.DataType{}, fmt.Errorf("type %q: %w", s, err)
	}
	return publicType(t), nil
}

// publicType converts a parsed (and validated) type to the client's form. The parser builds
// the metadata form so that it can use metadata's validation of type parameters.
func publicType(t metadata.DataType) fluss.DataType {
	out := fluss.DataType{
		Root: fluss.TypeRoot(t.Root), NotNull: t.NotNull,
		Length: t.Length, Precision: t.Precision, Scale: t.Scale,
	}
	sub := func(e *metadata.DataType) *fluss.DataType {
		if e == nil {
			return nil
		}
		p := publicType(*e)
		return &p
	}
	if t.Root == metadata.Map {
		out.Key, out.Value = sub(t.Elem), sub(t.Value)
	} else {
		out.Elem = sub(t.Elem)
	}
	for _, f := range t.Fields {
		out.Fields = append(out.Fields, fluss.Field{Name: f.Name, Type: publicType(f.Type), Description: f.Description})
	}
	return out
}

type typeParser struct {
	src string
	pos int
}

func (p *typeParser) skipSpace() {
	for p.pos < len(p.src) && unicode.IsSpace(rune(p.src[p.pos])) {
		p.pos++
	}
}

// word reads an identifier (letters, digits, underscore), or a back-quoted name.
func (p *typeParser) word() string {
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '`' {
		end := strings.IndexByte(p.src[p.pos+1:], '`')
		if end < 0 {
			return ""
		}
		w := p.src[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return w
	}
	start := p.pos
	for p.pos < len(p.src) {
		c := rune(p.src[p.pos])
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '_' {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *typeParser) peek(c byte) bool {
	p.skipSpace()
	return p.pos < len(p.src) && p.src[p.pos] == c
}

func (p *typeParser) expect(c byte) error {
	if !p.peek(c) {
		return fmt.Errorf("expected %q at position %d", c, p.pos)
	}
	p.pos++
	return nil
}

// params reads an optional "(n)" or "(n, m)".
func (p *typeParser) params() ([]int, error) {
	if !p.peek('(') {
		return nil, nil
	}
	p.pos++
	var out []int
	for {
		w := p.word()
		n, err := strconv.Atoi(w)
		if err != nil {
			return nil, fmt.Errorf("bad type parameter %q", w)
		}
		out = append(out, n)
		if p.peek(',') {
			p.pos++
			continue
		}
		return out, p.expect(')')
	}
}

// keywordsAhead consumes the given upper-case words if they come next.
func (p *typeParser) keywordsAhead(words ...string) bool {
	save := p.pos
	for _, w := range words {
		if !strings.EqualFold(p.word(), w) {
			p.pos = save
			return false
		}
	}
	return true
}

func (p *typeParser) parse() (metadata.DataType, error) {
	name := strings.ToUpper(p.word())
	if name == "" {
		return metadata.DataType{}, fmt.Errorf("expected a type name at position %d", p.pos)
	}
	var t metadata.DataType
	simple := map[string]metadata.TypeRoot{
		"BOOLEAN": metadata.Boolean, "BOOL": metadata.Boolean, "TINYINT": metadata.TinyInt, "SMALLINT": metadata.SmallInt,
		"INT": metadata.Int, "INTEGER": metadata.Int, "BIGINT": metadata.BigInt, "FLOAT": metadata.Float,
		"DOUBLE": metadata.Double, "STRING": metadata.String, "VARCHAR": metadata.String, "BYTES": metadata.Bytes,
		"VARBINARY": metadata.Bytes, "DATE": metadata.Date,
	}
	if r, ok := simple[name]; ok {
		t.Root = r
		if name == "DOUBLE" {
			p.keywordsAhead("PRECISION")
		}
		if name == "VARCHAR" || name == "VARBINARY" {
			if _, err := p.params(); err != nil { // a length is accepted and ignored
				return t, err
			}
		}
	} else {
		switch name {
		case "CHAR", "BINARY":
			t.Root, t.Length = metadata.Char, 1
			if name == "BINARY" {
				t.Root = metadata.Binary
			}
			ps, err := p.params()
			if err != nil {
				return t, err
			}
			if len(ps) == 1 {
				t.Length = ps[0]
			} else if len(ps) > 1 {
				return t, fmt.Errorf("%s takes one parameter", name)
			}
		case "DECIMAL", "NUMERIC", "DEC":
			t.Root, t.Precision, t.Scale = metadata.Decimal, 10, 0
			ps, err := p.params()
			if err != nil {
				return t, err
			}
			switch len(ps) {
			case 0:
			case 1:
				t.Precision = ps[0]
			case 2:
				t.Precision, t.Scale = ps[0], ps[1]
			default:
				return t, fmt.Errorf("DECIMAL takes (precision, scale)")
			}
		case "TIME", "TIMESTAMP", "TIMESTAMP_LTZ":
			t.Root = map[string]metadata.TypeRoot{"TIME": metadata.Time, "TIMESTAMP": metadata.Timestamp, "TIMESTAMP_LTZ": metadata.TimestampLTZ}[name]
			t.Precision = map[string]int{"TIME": 0, "TIMESTAMP": 6, "TIMESTAMP_LTZ": 6}[name]
			ps, err := p.params()
			if err != nil {
				return t, err
			}
			if len(ps) == 1 {
				t.Precision = ps[0]
			} else if len(ps) > 1 {
				return t, fmt.Errorf("%s takes one parameter", name)
			}
			if name == "TIMESTAMP" && p.keywordsAhead("WITH", "LOCAL", "TIME", "ZONE") {
				t.Root = metadata.TimestampLTZ
			} else if name == "TIMESTAMP" {
				p.keywordsAhead("WITHOUT", "TIME", "ZONE")
			}
		case "ARRAY":
			if err := p.expect('<'); err != nil {
				return t, err
			}
			e, err := p.parse()
			if err != nil {
				return t, err
			}
			t.Root, t.Elem = metadata.Array, &e
			if err := p.expect('>'); err != nil {
				return t, err
			}
		case "MAP":
			if err := p.expect('<'); err != nil {
				return t, err
			}
			k, err := p.parse()
			if err != nil {
				return t, err
			}
			if err := p.expect(','); err != nil {
				return t, err
			}
			v, err := p.parse()
			if err != nil {
				return t, err
			}
			t.Root, t.Elem, t.Value = metadata.Map, &k, &v
			if err := p.expect('>'); err != nil {
				return t, err
			}
		case "ROW":
			if err := p.expect('<'); err != nil {
				return t, err
			}
			t.Root = metadata.Row
			for {
				fname := p.word()
				if fname == "" {
					return t, fmt.Errorf("expected a ROW field name at position %d", p.pos)
				}
				ft, err := p.parse()
				if err != nil {
					return t, err
				}
				t.Fields = append(t.Fields, metadata.Field{Name: fname, Type: ft, ID: -1})
				if p.peek(',') {
					p.pos++
					continue
				}
				break
			}
			if err := p.expect('>'); err != nil {
				return t, err
			}
		default:
			return t, fmt.Errorf("unknown type %s", name)
		}
	}
	if p.keywordsAhead("NOT", "NULL") {
		t.NotNull = true
	} else {
		p.keywordsAhead("NULL")
	}
	return t, nil
}
