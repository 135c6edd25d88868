package logstore

// Unsynced reports whether bytes were appended since the last fdatasync of the active
// segment (always false for a closed log). The primary-key store asks before it lets Pebble
// persist state derived from those bytes.
func (l *Log) Unsynced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dirty && !l.closed
}
