// Package progress draws a progress line for long-running commands (strom produce, strom
// bench) on a terminal: a bar with the percentage and ETA when the total is known, the
// throughput always.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bar is a progress line. Add to Rows and Bytes from any goroutine; the line is redrawn in the
// background until Finish.
type Bar struct {
	Rows  atomic.Int64
	Bytes atomic.Int64

	w          io.Writer
	terminal   bool
	label      string
	totalBytes int64 // the fraction done is Bytes/totalBytes when > 0,
	totalRows  int64 // else Rows/totalRows when > 0, else unknown
	start      time.Time
	every      time.Duration
	now        func() time.Time

	stop     chan struct{}
	stopped  sync.WaitGroup
	finished sync.Once
	width    int // width of the last line drawn, to blank it
}

// Options configure a Bar.
type Options struct {
	Label      string // printed first, e.g. "orders"
	TotalBytes int64  // bytes to process, if known
	TotalRows  int64  // rows to process, if known (used when TotalBytes is 0)
	// Terminal redraws one line in place every 200ms; otherwise a line is printed every 5s.
	Terminal bool
}

// Start starts drawing on w.
func Start(w io.Writer, o Options) *Bar {
	b := &Bar{w: w, terminal: o.Terminal, label: o.Label, totalBytes: o.TotalBytes, totalRows: o.TotalRows,
		start: time.Now(), now: time.Now, stop: make(chan struct{}), every: 5 * time.Second}
	if o.Terminal {
		b.every = 200 * time.Millisecond
	}
	b.stopped.Add(1)
	go b.loop()
	return b
}

func (b *Bar) loop() {
	defer b.stopped.Done()
	t := time.NewTicker(b.every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.draw(false)
		}
	}
}

// Finish stops the redraws and prints the final line.
func (b *Bar) Finish() {
	b.finished.Do(func() {
		close(b.stop)
		b.stopped.Wait()
		b.draw(true)
	})
}

func (b *Bar) draw(final bool) {
	line := b.Line(b.now().Sub(b.start), final)
	if b.terminal {
		pad := ""
		if n := b.width - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		b.width = len(line)
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(b.w, "\r%s%s%s", line, pad, end)
		return
	}
	fmt.Fprintln(b.w, line)
}

// Line renders the progress after elapsed.
func (b *Bar) Line(elapsed time.Duration, final bool) string {
	rows, bytes := b.Rows.Load(), b.Bytes.Load()
	secs := max(elapsed.Seconds(), 1e-9)
	frac := -1.0
	switch {
	case b.totalBytes > 0:
		frac = float64(bytes) / float64(b.totalBytes)
	case b.totalRows > 0:
		frac = float64(rows) / float64(b.totalRows)
	}
	var parts []string
	if b.label != "" {
		parts = append(parts, b.label)
	}
	if frac >= 0 {
		frac = min(frac, 1)
		const width = 24
		full := int(frac * width)
		bar := strings.Repeat("=", full)
		if full < width {
			bar += ">" + strings.Repeat(" ", width-full-1)
		}
		parts = append(parts, fmt.Sprintf("[%s] %3.0f%%", bar, frac*100))
	}
	parts = append(parts, Count(rows)+" rows", Count(int64(float64(rows)/secs))+" rows/s")
	if bytes > 0 {
		s := Bytes(bytes)
		if b.totalBytes > 0 {
			s += "/" + Bytes(b.totalBytes)
		}
		parts = append(parts, s, Bytes(int64(float64(bytes)/secs))+"/s")
	}
	switch {
	case final:
		parts = append(parts, "in "+Duration(elapsed))
	case frac > 0 && frac < 1:
		parts = append(parts, "ETA "+Duration(time.Duration(float64(elapsed)*(1-frac)/frac)))
	default:
		parts = append(parts, Duration(elapsed)+" elapsed")
	}
	return strings.Join(parts, "  ")
}

// Count formats n with thousands separators: 1234567 -> "1,234,567".
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Bytes formats a byte count in binary units: "512 B", "1.5 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Duration formats a duration as m:ss or h:mm:ss.
func Duration(d time.Duration) string {
	s := int64(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
