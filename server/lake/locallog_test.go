package lake

import "github.com/stromdb/strom/server/logstore"

// LocalLog reads a log of this process; the tests tier logstore logs directly.
func LocalLog(l *logstore.Log) BucketLog { return l }

// A *logstore.Log is a BucketLog as is, without an adapter.
var _ BucketLog = (*logstore.Log)(nil)
