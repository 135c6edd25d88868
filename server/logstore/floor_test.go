package logstore

import (
	"testing"
	"time"
)

// The retention floor keeps every segment holding offsets at or above it, however old.
func TestRetentionFloor(t *testing.T) {
	l := open(t, t.TempDir(), Options{SegmentBytes: 300, TTL: time.Second})
	defer l.Close()
	for i := 0; i < 9; i++ { // two batches per segment: [0,1] [2,3] [4,5] [6,7] [8]
		mustAppend(t, l, int64(1000*(i+1)), plain(1, 100))
	}
	floor := int64(3)
	l.Retention().SetRetentionFloor(func() int64 { return floor })
	if n, err := l.Retention().DeleteExpiredSegments(1 << 40); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want only the segment below offset 3", n, err)
	}
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start %d, want 2", l.LogStartOffset())
	}
	floor = 0
	if n, _ := l.Retention().DeleteExpiredSegments(1 << 40); n != 0 {
		t.Fatalf("deleted %d with floor 0", n)
	}
	floor = 8
	if n, _ := l.Retention().DeleteExpiredSegments(1 << 40); n != 3 {
		t.Fatalf("deleted %d, want 3", n)
	}
}
