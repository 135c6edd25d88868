package control

import (
	"testing"
	"time"
)

func TestLeaseClockTrustsLessThanTheTTLFromTheSendTime(t *testing.T) {
	var l leaseClock
	t0 := time.Unix(1000, 0)
	if l.valid(t0) {
		t.Fatal("valid before the first grant")
	}
	l.renewed(t0, 2*time.Second)
	if !l.valid(t0.Add(1700 * time.Millisecond)) {
		t.Fatal("not valid within 0.9 of the TTL after the send")
	}
	if l.valid(t0.Add(1800 * time.Millisecond)) {
		t.Fatal("valid at 0.9 of the TTL after the send: no room for clock-rate differences")
	}
	// An answer to an older renewal, arriving late, never shortens the validity.
	l.renewed(t0.Add(-time.Second), 2*time.Second)
	if !l.valid(t0.Add(1700 * time.Millisecond)) {
		t.Fatal("a late answer to an older renewal shortened the validity")
	}
	l.renewed(t0.Add(time.Second), 2*time.Second)
	if !l.valid(t0.Add(2700 * time.Millisecond)) {
		t.Fatal("a renewal did not extend the validity")
	}
}
