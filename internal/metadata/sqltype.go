package metadata

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// ParseSQLType parses a type in its SQL form, as DataType.String renders it and as Flink SQL
// writes it: INT, BIGINT NOT NULL, DECIMAL(10, 2), TIMESTAMP(3), TIMESTAMP_LTZ(6), CHAR(4),
// ARRAY<STRING>, MAP<STRING, INT>, ROW<a INT, b STRING>. Names are case-insensitive; the
// aliases each root lists after its own spelling (typeDef.sql) are accepted too. An alias is
// a keyword, optionally followed by "(n)" — a length that is accepted and ignored, as in
// VARCHAR(10) — and by further words that follow the parameters (TIMESTAMP(3) WITH LOCAL
// TIME ZONE). The type returned is valid.
func ParseSQLType(s string) (DataType, error) {
	p := &sqlParser{src: s}
	t, err := p.parse()
	if err != nil {
		return DataType{}, err
	}
	if p.skipSpace(); p.pos < len(p.src) {
		return DataType{}, fmt.Errorf("unexpected %q", p.src[p.pos:])
	}
	if err := t.Validate(); err != nil {
		return DataType{}, err
	}
	return t, nil
}

// sqlSpelling is one way of writing a root in SQL: a keyword, whether it takes an ignored
// length, and the words that follow its parameters.
type sqlSpelling struct {
	root          TypeRoot
	ignoredLength bool
	tail          []string
}

// sqlKeywords maps each upper-case keyword to its spellings, the longest tail first so that
// the parser tries TIMESTAMP WITH LOCAL TIME ZONE before TIMESTAMP. It is built on first use
// (typeDefs is filled by init).
var sqlKeywords = sync.OnceValue(func() map[string][]sqlSpelling {
	m := map[string][]sqlSpelling{}
	for r := Boolean; r <= LastTypeRoot; r++ {
		for _, spelling := range r.def().sql {
			words := strings.Fields(spelling)
			kw, ignored := strings.CutSuffix(words[0], "(n)")
			m[kw] = append(m[kw], sqlSpelling{root: r, ignoredLength: ignored, tail: words[1:]})
		}
	}
	for _, ss := range m {
		slices.SortStableFunc(ss, func(a, b sqlSpelling) int { return len(b.tail) - len(a.tail) })
	}
	return m
})

// sqlParser reads a type from src at pos.
type sqlParser struct {
	src string
	pos int
}

func (p *sqlParser) skipSpace() {
	for p.pos < len(p.src) && unicode.IsSpace(rune(p.src[p.pos])) {
		p.pos++
	}
}

// word reads an identifier (letters, digits, underscore), or a back-quoted name.
func (p *sqlParser) word() string {
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

func (p *sqlParser) peek(c byte) bool {
	p.skipSpace()
	return p.pos < len(p.src) && p.src[p.pos] == c
}

func (p *sqlParser) expect(c byte) error {
	if !p.peek(c) {
		return fmt.Errorf("expected %q at position %d", c, p.pos)
	}
	p.pos++
	return nil
}

// params reads an optional "(n)" or "(n, m)".
func (p *sqlParser) params() ([]int, error) {
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

// keywordsAhead consumes the given words (in any case) if they come next.
func (p *sqlParser) keywordsAhead(words ...string) bool {
	save := p.pos
	for _, w := range words {
		if !strings.EqualFold(p.word(), w) {
			p.pos = save
			return false
		}
	}
	return true
}

// nested parses a nested type.
func (p *sqlParser) nested() (*DataType, error) {
	t, err := p.parse()
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func (p *sqlParser) parse() (DataType, error) {
	name := strings.ToUpper(p.word())
	if name == "" {
		return DataType{}, fmt.Errorf("expected a type name at position %d", p.pos)
	}
	spellings := sqlKeywords()[name]
	if len(spellings) == 0 {
		return DataType{}, fmt.Errorf("unknown type %s", name)
	}
	// Read the parameters as each spelling's root takes them, until one whose tail follows.
	start := p.pos
	var t DataType
	for i, sp := range spellings {
		p.pos = start
		t = DataType{Root: sp.root}
		var err error
		if sp.ignoredLength {
			_, err = p.params()
		} else {
			err = sp.root.def().params.parseSQL(p, name, &t)
		}
		if err != nil {
			return t, err
		}
		if len(sp.tail) == 0 || p.keywordsAhead(sp.tail...) {
			break
		}
		if i == len(spellings)-1 {
			return t, fmt.Errorf("expected %s after %s", strings.Join(sp.tail, " "), name)
		}
	}
	if p.keywordsAhead("NOT", "NULL") {
		t.NotNull = true
	} else {
		p.keywordsAhead("NULL")
	}
	return t, nil
}
