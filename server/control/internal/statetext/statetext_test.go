package statetext

import (
	"testing"

	"github.com/stromdb/strom/server/cluster"
)

func TestRoundTrip(t *testing.T) {
	for _, line := range []string{
		"1/-/0 r=1,2,3 l=1 isr=1,2,3 le=4 be=7 ce=9",
		"12/40/3 r=2 l=- isr=",
		"1/-/1 r=1,2 l=2 isr=2 be=1",
	} {
		b, st, err := ParseState(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if got := FormatState(b, st); got != line {
			t.Errorf("%q read and printed as %q", line, got)
		}
	}
	if _, st, _ := ParseState("1/-/0 r=1"); st.Leader != cluster.NoLeader {
		t.Errorf("an omitted leader is %d, want NoLeader", st.Leader)
	}
	for _, bad := range []string{"", "1/0", "1/-/0 x=1", "1/-/0 r=a", "1/-/0 l"} {
		if _, _, err := ParseState(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
