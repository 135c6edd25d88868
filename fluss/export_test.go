package fluss

// LookupRequests returns how many LOOKUP requests t's lookups have sent.
func LookupRequests(t *Table) int64 { return t.lookups.requests.Load() }

// RemoteSegmentReads returns how many times s read a remote log segment.
func RemoteSegmentReads(s *LogScanner) int64 { return s.f.remoteReads.Load() }
