package bench

import "testing"

func TestInterleave(t *testing.T) {
	for _, tc := range []struct{ writes, lookups int }{{3, 9}, {9, 3}, {1, 0}, {0, 4}, {5, 5}, {1, 100}} {
		ws, ls := make([]prepared, tc.writes), make([]prepared, tc.lookups)
		out := interleave(ws, ls)
		if len(out) != tc.writes+tc.lookups {
			t.Fatalf("%+v: %d requests", tc, len(out))
		}
		seen := map[*prepared]bool{}
		nw, maxGap, gap := 0, 0, 0
		for _, r := range out {
			if seen[r.p] {
				t.Fatalf("%+v: request sent twice", tc)
			}
			seen[r.p] = true
			if r.write {
				nw++
				maxGap, gap = max(maxGap, gap), 0
			} else {
				gap++
			}
		}
		if nw != tc.writes {
			t.Errorf("%+v: %d writes", tc, nw)
		}
		// Lookups are spread: between two writes there are at most ceil(lookups/writes)+1.
		if tc.writes > 1 && maxGap > tc.lookups/tc.writes+2 {
			t.Errorf("%+v: %d lookups in a row between writes", tc, maxGap)
		}
	}
}
