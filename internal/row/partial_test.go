package row

import (
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
)

func TestColumnSet(t *testing.T) {
	s := NewColumnSet(0, 2, 70, -1)
	for i, want := range map[int]bool{0: true, 1: false, 2: true, 70: true, 71: false, -1: false, 1000: false} {
		if s.Has(i) != want {
			t.Errorf("Has(%d) = %v", i, !want)
		}
	}
	if !NewColumnSet(1).Equal(NewColumnSet(1)) || NewColumnSet(1).Equal(NewColumnSet(1, 64)) ||
		!NewColumnSet().Equal(ColumnSet{words: []uint64{0, 0}}) {
		t.Error("Equal wrong")
	}
}

func TestCheckTargetColumns(t *testing.T) {
	types := []metadata.DataType{notNull(ty(metadata.Int)), ty(metadata.String), ty(metadata.BigInt)}
	if err := CheckTargetColumns(types, []int{0}, NewColumnSet(0, 1)); err != nil {
		t.Errorf("valid targets: %v", err)
	}
	if err := CheckTargetColumns(types, []int{0}, NewColumnSet(1)); ferr.CodeOf(err) != ferr.InvalidTargetColumn {
		t.Errorf("missing pk: %v", err)
	}
	if err := CheckTargetColumns(types, []int{0}, NewColumnSet(0, 5)); ferr.CodeOf(err) != ferr.InvalidTargetColumn {
		t.Errorf("unknown column: %v", err)
	}
	bad := []metadata.DataType{notNull(ty(metadata.Int)), notNull(ty(metadata.String)), ty(metadata.BigInt)}
	if err := CheckTargetColumns(bad, []int{0}, NewColumnSet(0, 2)); ferr.CodeOf(err) != ferr.InvalidTargetColumn {
		t.Errorf("NOT NULL non-pk column: %v", err)
	}
}

func TestPartialUpdate(t *testing.T) {
	pk := NewColumnSet(0)
	old := []Datum{di(1), ds("alice"), di(30)}
	cases := []struct {
		name     string
		old      []Datum
		partial  []Datum
		targets  ColumnSet
		n        int
		want     []Datum
		wantKeep bool
	}{
		{"update name keeps age", old, []Datum{di(1), ds("bob"), dnull()}, NewColumnSet(0, 1), 3,
			[]Datum{di(1), ds("bob"), di(30)}, false},
		{"no old row: untargeted are NULL", nil, []Datum{di(1), dnull(), di(5)}, NewColumnSet(0, 2), 3,
			[]Datum{di(1), dnull(), di(5)}, false},
		{"targeted NULL overwrites", old, []Datum{di(1), dnull(), dnull()}, NewColumnSet(0, 1), 3,
			[]Datum{di(1), dnull(), di(30)}, false},
		{"old schema is narrower", old[:2], []Datum{di(1), ds("x"), dnull(), dnull()}, NewColumnSet(0, 1), 4,
			[]Datum{di(1), ds("x"), dnull(), dnull()}, false},
		{"only pk targeted: no-op", old, []Datum{di(1), dnull(), dnull()}, NewColumnSet(0), 3,
			old, true},
		{"only pk targeted, no old row: insert", nil, []Datum{di(1), ds("y"), di(2)}, NewColumnSet(0), 3,
			[]Datum{di(1), dnull(), dnull()}, false},
	}
	for _, c := range cases {
		got, keep := PartialUpdate(nil, c.old, c.partial, c.targets, pk, c.n)
		if keep != c.wantKeep || !datumsEqual(got, c.want) {
			t.Errorf("%s: got %+v keep=%v", c.name, got, keep)
		}
	}
}

func TestPartialDelete(t *testing.T) {
	pk := NewColumnSet(0)
	cases := []struct {
		name    string
		old     []Datum
		targets ColumnSet
		n       int
		want    []Datum
		wantDel bool
	}{
		{"other columns all NULL: delete", []Datum{di(1), ds("a"), dnull()}, NewColumnSet(0, 1), 3, nil, true},
		{"other columns set: null the targets", []Datum{di(1), ds("a"), di(3)}, NewColumnSet(0, 1), 3,
			[]Datum{di(1), dnull(), di(3)}, false},
		{"narrow old row padded", []Datum{di(1), ds("a"), di(3)}, NewColumnSet(0, 2), 4,
			[]Datum{di(1), ds("a"), dnull(), dnull()}, false},
	}
	for _, c := range cases {
		got, del := PartialDelete(nil, c.old, c.targets, pk, c.n)
		if del != c.wantDel || (!del && !datumsEqual(got, c.want)) {
			t.Errorf("%s: got %+v del=%v", c.name, got, del)
		}
	}
}
