package cli

import (
	"strings"
	"unicode"
)

// cellText renders a value's JSON form (toJSON) in one cell of an aligned table, so that
// every cell reads back unambiguously:
//
//	NULL                 a NULL
//	"NULL", "", " x"     strings that would read as something else, JSON-quoted
//	"a\nb"               strings with line breaks, tabs or other control characters,
//	                     JSON-quoted (escaped), so a row stays on one line
//	text                 every other string, bare
//	42, [1,2], {"k":1}   everything else as JSON
func cellText(v any) string {
	s, ok := v.(string)
	if !ok || !needsQuotes(s) {
		return textOf(v)
	}
	b, err := marshal(s)
	if err != nil {
		return textOf(v)
	}
	return string(b)
}

// needsQuotes reports whether a bare string cell could be mistaken for another value or
// would break the table's layout.
func needsQuotes(s string) bool {
	if s == "" || s == "NULL" || strings.HasPrefix(s, `"`) || strings.TrimSpace(s) != s {
		return true
	}
	return strings.ContainsFunc(s, unicode.IsControl)
}

// oneLine escapes the line breaks and tabs of a cell that is not a value (a comment, a
// name), which would otherwise break an aligned table.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
}
