package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLineWithKnownTotal(t *testing.T) {
	b := &Bar{totalBytes: 1000, label: "t"}
	b.Rows.Store(50)
	b.Bytes.Store(250)
	got := b.Line(10*time.Second, false)
	for _, want := range []string{"t  [", " 25%", "50 rows", "5 rows/s", "250 B/1000 B", "ETA 0:30"} {
		if !strings.Contains(got, want) {
			t.Errorf("line %q lacks %q", got, want)
		}
	}
}

func TestLineWithUnknownTotal(t *testing.T) {
	b := &Bar{}
	b.Rows.Store(1234567)
	got := b.Line(2*time.Second, false)
	if strings.Contains(got, "%") || strings.Contains(got, "ETA") {
		t.Errorf("line %q shows a percentage or ETA without a total", got)
	}
	if !strings.Contains(got, "1,234,567 rows") || !strings.Contains(got, "617,283 rows/s") {
		t.Errorf("line %q", got)
	}
	if got := b.Line(3*time.Second, true); !strings.Contains(got, "in 0:03") {
		t.Errorf("final line %q", got)
	}
}

func TestTerminalRedrawsInPlaceAndEndsWithNewline(t *testing.T) {
	var out bytes.Buffer
	b := Start(&out, Options{TotalRows: 10, Terminal: true})
	b.Rows.Store(10)
	b.Finish()
	s := out.String()
	if !strings.HasPrefix(s, "\r") || !strings.HasSuffix(s, "\n") || !strings.Contains(s, "100%") {
		t.Errorf("terminal output %q", s)
	}
}

func TestFormats(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567"} {
		if got := Count(in); got != want {
			t.Errorf("Count(%d) = %q, want %q", in, got, want)
		}
	}
	if got := Bytes(1536 << 10); got != "1.5 MiB" {
		t.Errorf("Bytes = %q", got)
	}
	if got := Duration(3725 * time.Second); got != "1:02:05" {
		t.Errorf("Duration = %q", got)
	}
}
