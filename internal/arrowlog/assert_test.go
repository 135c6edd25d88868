package arrowlog

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/stromdb/strom/internal/row"
)

func datumString(d row.Datum) string {
	if d.Null {
		return "NULL"
	}
	s := fmt.Sprintf("{I:%d F:%v B:%x N:%d", d.I, d.F, d.B, d.Nanos)
	if d.Elems != nil {
		s += " E:["
		for _, e := range d.Elems {
			s += datumString(e) + " "
		}
		s += "]"
	}
	if d.Vals != nil {
		s += " V:["
		for _, e := range d.Vals {
			s += datumString(e) + " "
		}
		s += "]"
	}
	return s + "}"
}

func datumEqual(a, b row.Datum) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	if a.I != b.I || a.Nanos != b.Nanos || !bytes.Equal(a.B, b.B) {
		return false
	}
	if a.F != b.F && !(math.IsNaN(a.F) && math.IsNaN(b.F)) {
		return false
	}
	if len(a.Elems) != len(b.Elems) || len(a.Vals) != len(b.Vals) {
		return false
	}
	for i := range a.Elems {
		if !datumEqual(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	for i := range a.Vals {
		if !datumEqual(a.Vals[i], b.Vals[i]) {
			return false
		}
	}
	return true
}

func assertRows(t testing.TB, got, want [][]row.Datum) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("row %d: %d fields, want %d", i, len(got[i]), len(want[i]))
		}
		for j := range got[i] {
			if !datumEqual(got[i][j], want[i][j]) {
				t.Fatalf("row %d field %d: got %s want %s", i, j, datumString(got[i][j]), datumString(want[i][j]))
			}
		}
	}
}
