package fluss

// LookupRequests returns how many LOOKUP requests t's lookups have sent.
func LookupRequests(t *Table) int64 { return t.lookups.requests.Load() }
