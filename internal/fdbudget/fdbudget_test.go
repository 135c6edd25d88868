package fdbudget

import (
	"os"
	"testing"
)

func TestPlanReservesStorageFirst(t *testing.T) {
	for _, tc := range []struct {
		limit, reserved int
		want            Budget
	}{
		{1024, 0, Budget{Limit: 1024, Reserved: 512, Connections: 512}},
		{65536, 0, Budget{Limit: 65536, Reserved: 32768, Connections: 32768}},
		{540, 0, Budget{Limit: 540, Reserved: 512, Connections: MinConnections}},
		{1024, 900, Budget{Limit: 1024, Reserved: 900, Connections: 124}},
	} {
		if got := Plan(tc.limit, tc.reserved); got != tc.want {
			t.Errorf("Plan(%d, %d) = %+v, want %+v", tc.limit, tc.reserved, got, tc.want)
		}
	}
}

func TestOpenCountsNewDescriptors(t *testing.T) {
	before, err := Open()
	if err != nil {
		t.Skip(err)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Fatalf("open descriptors %d after opening one more than %d", after, before)
	}
}

func TestRaiseReachesTheHardLimit(t *testing.T) {
	_, after, err := Raise()
	if err != nil {
		t.Fatal(err)
	}
	limit, err := Limit()
	if err != nil {
		t.Fatal(err)
	}
	if uint64(limit) != after && after < 1<<62 {
		t.Fatalf("Limit() = %d after Raise returned %d", limit, after)
	}
}
