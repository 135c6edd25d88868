package bench

import "github.com/stromdb/strom/cmd/strom/progress"

// startProgress starts cfg.Progress's bar for a timed section, or returns nil.
func (c *Config) startProgress(label string, totalRows int64) *progress.Bar {
	if c.Progress == nil {
		return nil
	}
	return c.Progress(label, totalRows)
}

// advance adds completed rows and bytes to b (nil: no bar).
func advance(b *progress.Bar, rows, bytes int64) {
	if b != nil {
		b.Rows.Add(rows)
		b.Bytes.Add(bytes)
	}
}

// finish draws b's final line (nil: no bar).
func finish(b *progress.Bar) {
	if b != nil {
		b.Finish()
	}
}
