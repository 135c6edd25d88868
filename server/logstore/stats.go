package logstore

// Stats is a point-in-time summary of a log for monitoring.
type Stats struct {
	Segments int   // segment files in local storage
	Bytes    int64 // bytes of whole batches across all segments
	Writers  int   // idempotent writer ids whose state the log keeps
}

// Stats returns the log's size, segment count and writer count. It reads the published view
// like any reader and takes the writer lock only to count writers, so it is cheap enough to
// call on every metrics scrape.
func (l *Log) Stats() Stats {
	v := l.v.Load()
	st := Stats{Segments: len(v.segs)}
	for _, s := range v.segs {
		s.mu.RLock()
		st.Bytes += s.size
		s.mu.RUnlock()
	}
	l.mu.Lock()
	st.Writers = len(l.writers)
	l.mu.Unlock()
	return st
}
