package arrowlog

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/internal/row"
)

// A batch written before columns were added, projected onto fields of the later schema: the
// stored columns come through, the added ones are all NULL, and the batch is relabelled with
// the later schema id.
func TestProjectOldBatchOntoLaterSchema(t *testing.T) {
	storedCols := allCols[:4]
	stored, _ := ArrowSchema(storedCols)
	target, _ := ArrowSchema(allCols)
	const n = 19
	rows := genRows(7, storedCols, n)
	rec, err := RowsToRecord(stored, storedCols, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, c := range compressions {
		batch, err := AppendBatch(nil, record.V0Header{SchemaID: 1, WriterID: 3, BatchSequence: 4}, rec, nil, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, proj := range [][]int{{0, 3}, {1, 8}, {4}, {0, 9, 12, 24, 25, 26, 27, 28}, {3, 5, 6, 7, 10, 11, 13, 14, 18, 21, 22, 23}} {
			t.Run(fmt.Sprintf("%v/%v", c, proj), func(t *testing.T) {
				p, err := NewProjectionTo(stored, target, 2, proj)
				if err != nil {
					t.Fatal(err)
				}
				out, err := p.AppendBatch(nil, batch)
				if err != nil {
					t.Fatal(err)
				}
				pb := record.Batch(out)
				if err := pb.Validate(); err != nil {
					t.Fatal(err)
				}
				wantID := int16(1)
				if proj[len(proj)-1] >= len(storedCols) {
					wantID = 2
				}
				if pb.SchemaID() != wantID || pb.WriterID() != 3 || pb.BatchSequence() != 4 || pb.RecordCount() != n {
					t.Fatalf("header: schema %d writer %d seq %d count %d", pb.SchemaID(), pb.WriterID(), pb.BatchSequence(), pb.RecordCount())
				}
				pcols := pickCols(allCols, proj)
				ps, _ := ArrowSchema(pcols)
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				_, got, err := Decode(ps, true, n, pb.Records(), mem)
				if err != nil {
					t.Fatal(err)
				}
				defer got.Release()
				back, err := RecordToRows(got, pcols)
				if err != nil {
					t.Fatal(err)
				}
				want := make([][]row.Datum, n)
				for i := range want {
					for _, f := range proj {
						if f < len(storedCols) {
							want[i] = append(want[i], rows[i][f])
						} else {
							want[i] = append(want[i], row.NullDatum)
						}
					}
				}
				assertRows(t, back, want)
			})
		}
	}
}

func TestProjectionToInvalid(t *testing.T) {
	stored, _ := ArrowSchema(allCols[:2])
	target, _ := ArrowSchema(allCols[:5])
	for _, proj := range [][]int{{}, {3, 2}, {4, 4}, {5}, {0, 7}} {
		if _, err := NewProjectionTo(stored, target, 2, proj); ferr.CodeOf(err) != ferr.InvalidColumnProjection {
			t.Errorf("%v: %v", proj, err)
		}
	}
}
