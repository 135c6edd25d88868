package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stromdb/strom/fluss"
)

// Messages for values that do not convert to their column's type. The converters of
// values.go return whatever strconv, time or the JSON walk said; the call sites wrap that
// with badValue, which names the column, quotes the text and says the form the type takes,
// so no Go parser's wording (`strconv.ParseInt: parsing "ten": invalid syntax`) reaches the
// user.

// badValue is a value of column that did not convert to its type.
type badValue struct {
	column string
	typ    fluss.DataType
	text   string // the value as given: a CSV cell, a KEY=VALUE value, a JSON value
	json   bool   // text is a JSON literal other than a string (a number, true, an array)
	err    error  // what the converter said
}

func (e *badValue) Unwrap() error { return e.err }

func (e *badValue) Error() string {
	return fmt.Sprintf("column %q: %s", e.column, e.reason())
}

// reason is the message without the column.
func (e *badValue) reason() string {
	typ := e.typ.Nullable(true).String()
	var form string
	if f := formOf(e.typ); f != nil {
		form = f.hint
	}
	text := quoteValue(e.text)
	if e.json {
		text = cutValue(e.text)
	}
	var ne *strconv.NumError
	switch {
	case e.typ.Root == fluss.TypeArray || e.typ.Root == fluss.TypeMap || e.typ.Root == fluss.TypeRow:
		// The error names the element that failed ("element 1: ..."); keep that path and
		// clean the parser's words inside it.
		return fmt.Sprintf("%s is not %s: %s", text, article(typ), plainError(e.err))
	case errors.As(e.err, &ne) && errors.Is(ne.Err, strconv.ErrRange):
		return fmt.Sprintf("%s is out of range for %s (want %s)", text, typ, form)
	}
	return fmt.Sprintf("%s is not %s (want %s)", text, article(typ), form)
}

// plainError rewrites the strconv and time errors inside err as plain words.
func plainError(err error) string {
	msg := err.Error()
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		plain := fmt.Sprintf("%q is not a number", ne.Num)
		if errors.Is(ne.Err, strconv.ErrRange) {
			plain = fmt.Sprintf("%q is out of range", ne.Num)
		}
		msg = strings.Replace(msg, ne.Error(), plain, 1)
	}
	var te *time.ParseError
	if errors.As(err, &te) {
		msg = strings.Replace(msg, te.Error(), fmt.Sprintf("%q is not a date or time of the form %s", te.Value, te.Layout), 1)
	}
	return msg
}

// quoteValue quotes a value for a message; long values are cut.
func quoteValue(s string) string { return strconv.Quote(cutValue(s)) }

// cutValue shortens a long value for a message.
func cutValue(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return s
}

// article is "a TYPE" or "an TYPE".
func article(typ string) string {
	if typ != "" && strings.ContainsRune("AEIOU", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// jsonValue is the badValue of a decoded JSON value v of column: a string by its text,
// anything else as JSON.
func jsonValue(column string, t fluss.DataType, v any, err error) *badValue {
	if s, ok := v.(string); ok {
		return &badValue{column: column, typ: t, text: s, err: err}
	}
	b, merr := marshal(v)
	if merr != nil {
		b = []byte(fmt.Sprint(v))
	}
	return &badValue{column: column, typ: t, text: string(b), json: true, err: err}
}

// atLine places err at an input line: "line 3, column "age": ..." for a bad value,
// "line 3: ..." otherwise. The error stays wrapped.
func atLine(line int, err error) error { return &lineError{line: line, err: err} }

type lineError struct {
	line int
	err  error
}

func (e *lineError) Unwrap() error { return e.err }

func (e *lineError) Error() string {
	var bv *badValue
	if errors.As(e.err, &bv) {
		return fmt.Sprintf("line %d, %v", e.line, e.err)
	}
	return fmt.Sprintf("line %d: %v", e.line, e.err)
}

// csvSyntaxError words encoding/csv's syntax errors for people: where, and how to quote.
func csvSyntaxError(err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	what := pe.Err.Error()
	switch {
	case errors.Is(pe.Err, csv.ErrBareQuote):
		what = `a " inside a cell that is not quoted (quote the cell, and write each " in it as "")`
	case errors.Is(pe.Err, csv.ErrQuote):
		what = `a quoted cell whose closing " is missing or followed by more text (write each " inside it as "")`
	}
	return &lineError{line: pe.Line, err: fmt.Errorf("CSV: %s, at byte %d of the line", what, pe.Column)}
}
