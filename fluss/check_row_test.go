package fluss_test

import (
	"testing"

	"github.com/stromdb/strom/fluss"
)

// CheckRow refuses what Append refuses and accepts what it accepts, writing nothing.
func TestCheckRow(t *testing.T) {
	conn, ctx := connect(t)
	path := fluss.NewTablePath("fluss", "checked")
	desc := fluss.TableDescriptor{Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.DataType{Root: fluss.TypeInt, NotNull: true}),
		fluss.NewColumn("price", fluss.DataType{Root: fluss.TypeDecimal, Precision: 5, Scale: 2}),
	}), BucketCount: 1}
	if err := conn.Admin().CreateTable(ctx, path, desc, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tbl.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	price := func(s string) fluss.Decimal {
		d, err := fluss.ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		row fluss.Row
		ok  bool
	}{
		{fluss.Row{int32(1), price("1.50")}, true},
		{fluss.Row{int32(1), nil}, true},
		{fluss.Row{nil, price("1.50")}, false},        // NULL in NOT NULL
		{fluss.Row{int32(1), price("1234.5")}, false}, // beyond precision 5
		{fluss.Row{int32(1), price("1.505")}, false},  // beyond scale 2
		{fluss.Row{int32(1)}, false},                  // one value short
		{fluss.Row{"one", price("1.50")}, false},      // a string for an INT
	} {
		err := tbl.CheckRow(tc.row)
		_, appendErr := w.Append(ctx, tc.row)
		if (err == nil) != tc.ok || (appendErr == nil) != tc.ok {
			t.Errorf("CheckRow(%v) = %v, Append: %v; want ok=%v", tc.row, err, appendErr, tc.ok)
		}
	}
}
