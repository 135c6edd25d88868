package fluss

// LookupRequests returns how many LOOKUP requests t's lookups have sent.
func LookupRequests(t *Table) int64 { return t.lookups.requests.Load() }

// RemoteSegmentReads returns how many times s read a remote log segment.
func RemoteSegmentReads(s *LogScanner) int64 { return s.f.remoteReads.Load() }

// SubscribedOffset returns the offset s fetches bucket from next (-3 when not subscribed).
func SubscribedOffset(s *LogScanner, bucket int32) int64 {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if o, ok := s.f.subs[NewTableBucket(s.f.t.info.TableID, bucket)]; ok {
		return o
	}
	return -3
}

// RecordBytes returns the record bytes s received from FETCH_LOG answers.
func RecordBytes(s *LogScanner) int64 { return s.f.recordBytes.Load() }

// CopyFetchedRecords makes FETCH_LOG answers decode with proto.Unmarshal (on) or with the
// aliasing decoder (off, the default) until the test ends.
func CopyFetchedRecords(t interface{ Cleanup(func()) }, on bool) {
	copyFetchedRecords.Store(on)
	t.Cleanup(func() { copyFetchedRecords.Store(false) })
}
