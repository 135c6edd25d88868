package logstore

import (
	"log/slog"
	"sync"
	"time"
)

// ioErrorLogInterval is how often, at most, a failed write or sync is logged: on a full disk
// every append of every bucket fails, and one line says all there is to say.
const ioErrorLogInterval = 30 * time.Second

// ioErrors rate-limits the ERROR lines for failed writes across all logs of the process.
var ioErrors struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// logIOError reports a failed write, sync or roll of the log in dir. The client gets
// LOG_STORAGE_EXCEPTION in any case; the operator gets one ERROR line per interval, with the
// number of failures not logged since the previous one.
func logIOError(log *slog.Logger, dir, op string, err error) {
	ioErrors.mu.Lock()
	now := time.Now()
	if now.Sub(ioErrors.last) < ioErrorLogInterval {
		ioErrors.suppressed++
		ioErrors.mu.Unlock()
		return
	}
	n := ioErrors.suppressed
	ioErrors.last, ioErrors.suppressed = now, 0
	ioErrors.mu.Unlock()
	log.Error("logstore: write failed; appends to this bucket get LOG_STORAGE_EXCEPTION (is the disk full?)",
		"dir", dir, "op", op, "err", err, "failures_not_logged_since_last", n)
}
