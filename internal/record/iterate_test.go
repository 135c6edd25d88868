package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
)

func appendixBatches(t *testing.T) [][]byte {
	return [][]byte{
		loadHex(t, "v0_arrow_batch.hex"),
		loadHex(t, "v0_empty_cdc_batch.hex"),
		loadHex(t, "v0_indexed_batch.hex"),
		loadHex(t, "v0_arrow_changelog_batch.hex"),
	}
}

func TestIterateConcatenation(t *testing.T) {
	parts := appendixBatches(t)
	all := bytes.Join(parts, nil)
	// Cut the payload at every length: Iterate must yield exactly the batches that fit
	// completely and then stop without error.
	for cut := 0; cut <= len(all); cut++ {
		var got [][]byte
		for b, err := range Iterate(all[:cut]) {
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			got = append(got, b)
		}
		want, end := 0, 0
		for _, p := range parts {
			if end+len(p) > cut {
				break
			}
			end += len(p)
			want++
		}
		if len(got) != want {
			t.Fatalf("cut %d: %d batches, want %d", cut, len(got), want)
		}
		for i := range got {
			if !bytes.Equal(got[i], parts[i]) {
				t.Fatalf("cut %d: batch %d differs", cut, i)
			}
		}
	}
}

func TestIterateStopsOnCorruptShape(t *testing.T) {
	good := loadHex(t, "v0_empty_cdc_batch.hex")
	bad := bytes.Clone(good)
	bad[offMagic] = 9
	buf := bytes.Join([][]byte{good, bad, good}, nil)
	var n int
	var last error
	for b, err := range Iterate(buf) {
		if err != nil {
			last = err
			if b != nil {
				t.Fatal("error yielded with a batch")
			}
			continue
		}
		n++
	}
	if n != 1 || !errors.Is(last, ErrBadMagic) {
		t.Fatalf("n=%d err=%v", n, last)
	}

	// A Length too small for even the magic is corrupt, not torn.
	tiny := bytes.Clone(good[:LogOverhead])
	tiny[offLength] = 0
	r := NewBatchReader(append(tiny, 0, 0, 0))
	if _, ok := r.Next(); ok || !errors.Is(r.Err(), ErrBadLength) {
		t.Fatalf("tiny length: err=%v", r.Err())
	}
}

func TestIterateEarlyBreak(t *testing.T) {
	all := bytes.Join(appendixBatches(t), nil)
	n := 0
	for range Iterate(all) {
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}

func TestBatchReaderOffsets(t *testing.T) {
	parts := appendixBatches(t)
	all := bytes.Join(parts, nil)
	r := NewBatchReader(all[:len(all)-5])
	for i := 0; i < 3; i++ {
		if _, ok := r.Next(); !ok {
			t.Fatalf("batch %d missing", i)
		}
	}
	if _, ok := r.Next(); ok || r.Err() != nil {
		t.Fatalf("torn tail: ok=%v err=%v", ok, r.Err())
	}
	if want := len(all) - len(parts[3]); r.Offset() != want || len(r.Rest()) != len(parts[3])-5 {
		t.Fatalf("offset %d rest %d", r.Offset(), len(r.Rest()))
	}
}

func TestValidateAll(t *testing.T) {
	parts := appendixBatches(t)
	all := bytes.Join(parts, nil)
	badCRC := bytes.Clone(all)
	badCRC[len(parts[0])+layoutV0.crc] ^= 0xff // second batch
	tests := []struct {
		name  string
		in    []byte
		n     int
		want  error
		okErr bool
	}{
		{"empty", nil, 0, nil, true},
		{"one", parts[1], 1, nil, true},
		{"four", all, 4, nil, true},
		{"torn tail", all[:len(all)-1], 3, ErrTrailingBytes, false},
		{"garbage tail", append(bytes.Clone(all), 1, 2, 3), 4, ErrTrailingBytes, false},
		{"bad crc", badCRC, 1, ErrCRCMismatch, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ValidateAll(tt.in)
			if n != tt.n {
				t.Errorf("n = %d, want %d", n, tt.n)
			}
			if tt.okErr {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || ferr.CodeOf(err) != ferr.CorruptRecordException {
				t.Fatalf("err = %v (code %v), want %v", err, ferr.CodeOf(err), tt.want)
			}
		})
	}
}

func TestBatchReaderAllocs(t *testing.T) {
	all := bytes.Join(appendixBatches(t), nil)
	allocs := testing.AllocsPerRun(100, func() {
		r := NewBatchReader(all)
		for {
			b, ok := r.Next()
			if !ok {
				break
			}
			if b.Validate() != nil {
				panic("invalid")
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pass", allocs)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ValidateAll(all) }); n != 0 {
		t.Fatalf("ValidateAll: %v allocations", n)
	}
}
