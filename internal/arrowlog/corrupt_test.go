package arrowlog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
)

// TestMutationSweep corrupts every byte of valid messages in several ways. Decode must never
// panic, must fail only with CORRUPT_RECORD_EXCEPTION, and whatever it accepts must convert
// to rows and back without panicking.
func TestMutationSweep(t *testing.T) {
	type input struct {
		cols []metadata.Column
		rows int
		msg  []byte
	}
	var inputs []input
	for _, n := range []string{"ipc_uncompressed.hex", "ipc_zstd.hex", "ipc_lz4.hex"} {
		inputs = append(inputs, input{appendixCols, 2, readHex(t, n)})
	}
	schema, _ := ArrowSchema(allCols)
	rec, err := RowsToRecord(schema, allCols, genRows(8, allCols, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range compressions {
		msg, err := Encode(nil, rec, nil, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{allCols, 3, msg})
	}
	rec.Release()

	accepted, rejected := 0, 0
	for _, in := range inputs {
		s, _ := ArrowSchema(in.cols)
		buf := make([]byte, len(in.msg))
		m, err := parseMessage(in.msg)
		if err != nil {
			t.Fatal(err)
		}
		bodyStart := ipcPrefix + m.metaLen
		for i := range in.msg {
			if i > bodyStart && i%5 != 0 {
				continue // every metadata byte, a sample of body bytes
			}
			for _, mut := range []func(byte) byte{
				func(byte) byte { return 0 },
				func(byte) byte { return 0xff },
				func(b byte) byte { return b ^ 0x01 },
				func(b byte) byte { return b ^ 0x80 },
				func(b byte) byte { return b + 8 },
			} {
				copy(buf, in.msg)
				buf[i] = mut(buf[i])
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				_, r, err := Decode(s, true, in.rows, buf, mem)
				if err != nil {
					if ferr.CodeOf(err) != ferr.CorruptRecordException {
						t.Fatalf("byte %d: uncoded error %v", i, err)
					}
					rejected++
					mem.AssertSize(t, 0)
					continue
				}
				accepted++
				rows, err := RecordToRows(r, in.cols)
				if err != nil {
					t.Fatalf("byte %d: accepted but unreadable: %v", i, err)
				}
				r2, err := RowsToRecord(s, in.cols, rows, nil)
				if err == nil {
					r2.Release()
				}
				r.Release()
				mem.AssertSize(t, 0)
			}
		}
	}
	t.Logf("accepted %d, rejected %d mutations", accepted, rejected)
	if rejected == 0 {
		t.Fatal("no mutation was rejected")
	}
}
