package kvstore

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/diskwatch"
)

// Background write failures (a full disk, an I/O error) of Pebble's flushes and compactions.
//
// Pebble retries a failed flush at once, forever, and its Flush waits for success: on a full
// disk that spins a core and makes every Checkpoint and Close hang until space frees. Here
// its background errors are logged as one ERROR line per errorLogInterval (with the count
// suppressed meanwhile), a failed flush marks the store unable to write (WriteError) until a
// flush succeeds, its retry is slowed down with exponential backoff (the FlushEnd hook runs on
// Pebble's flush goroutine, so sleeping there delays the next attempt), and Checkpoint and
// Close wait for a flush only a bounded time. Nothing is lost by giving up a flush: Pebble's
// state is re-derived from the changelogs on the next start.

const (
	errorLogInterval = 30 * time.Second
	minRetryBackoff  = 50 * time.Millisecond
	maxRetryBackoff  = 2 * time.Second
)

// checkpointFlushWait and closeFlushWait bound how long Checkpoint and Close wait for a
// flush once Pebble reports failures (variables so that tests can shorten them).
var (
	checkpointFlushWait = 10 * time.Second
	closeFlushWait      = 5 * time.Second
)

// backgroundErrors watches Pebble's background work.
type backgroundErrors struct {
	log *slog.Logger

	mu         sync.Mutex
	last       error     // last background error since the last successful flush
	lastLogged time.Time // when an ERROR line was last written
	suppressed int       // errors not logged since then
	backoff    time.Duration
	failing    chan struct{} // closed at the next background error
	count      int           // background errors seen (tests)
}

func newBackgroundErrors(log *slog.Logger) *backgroundErrors {
	return &backgroundErrors{log: log, failing: make(chan struct{})}
}

// listener returns Pebble's event hooks. A failed flush (FlushEnd with an error) marks the
// store as unable to write and backs off; other background errors (compactions) are only
// logged, rate-limited, since Pebble retries them at its own pace and writes still succeed.
func (b *backgroundErrors) listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: b.onError,
		FlushEnd: func(info pebble.FlushInfo) {
			switch {
			case info.Err == nil:
				b.onSuccess()
			case strings.Contains(info.Err.Error(), "empty table"):
				// Pebble's errEmptyTable: nothing to write, not a failure.
			default:
				b.onFlushError(info.Err)
			}
		},
	}
}

// onError logs a background error, rate-limited. Cancelled compactions are routine.
func (b *backgroundErrors) onError(err error) {
	if strings.Contains(err.Error(), "compaction cancelled") {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logLocked(err)
}

func (b *backgroundErrors) logLocked(err error) {
	now := time.Now()
	if now.Sub(b.lastLogged) >= errorLogInterval {
		b.log.Error("kvstore: Pebble background write failed; retrying with backoff (is the disk full?)",
			"err", err, "suppressed_since_last", b.suppressed)
		b.lastLogged, b.suppressed = now, 0
	} else {
		b.suppressed++
	}
}

// onFlushError records a failed flush and sleeps before Pebble's immediate retry (Pebble
// calls this on its flush goroutine).
func (b *backgroundErrors) onFlushError(err error) {
	b.mu.Lock()
	b.last = err
	b.count++
	close(b.failing)
	b.failing = make(chan struct{})
	b.backoff = min(max(2*b.backoff, minRetryBackoff), maxRetryBackoff)
	d := b.backoff
	b.mu.Unlock()
	time.Sleep(d)
}

func (b *backgroundErrors) onSuccess() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		return
	}
	b.log.Info("kvstore: Pebble flushes succeed again", "after", b.last)
	b.last, b.backoff, b.lastLogged = nil, 0, time.Time{}
}

// state returns the last background error (nil when healthy) and a channel closed at the
// next one.
func (b *backgroundErrors) state() (failing <-chan struct{}, last error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failing, b.last
}

// flushWithin flushes the memtables, waiting at most wait once Pebble reports a background
// error (a healthy flush is waited for in full). It returns KV_STORAGE_EXCEPTION when Pebble
// is failing already, or the flush fails or does not finish in time; the flush keeps being
// retried in the background. Pebble's AsyncFlush itself blocks while the memtable queue is
// full, so it runs on its own goroutine.
func (s *Store) flushWithin(wait time.Duration) error {
	if err := s.WriteError(); err != nil {
		return err
	}
	type result struct {
		done <-chan struct{}
		err  error
	}
	started := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil { // AsyncFlush panics once the store is closed
				started <- result{err: fmt.Errorf("%v", p)}
			}
		}()
		done, err := s.db.AsyncFlush()
		started <- result{done, err}
	}()
	var done <-chan struct{}
	var deadline <-chan time.Time
	for {
		failing, last := s.bg.state()
		if last != nil && deadline == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case r := <-started:
			if r.err != nil {
				return ferr.New(ferr.KvStorageException, "kv flush: %v", r.err)
			}
			done = r.done
		case <-done:
			return nil
		case <-failing:
		case <-deadline:
			_, last := s.bg.state()
			return ferr.New(ferr.KvStorageException, "kv flush did not complete within %s: %v", wait, last)
		}
	}
}

// WriteError returns the KV_STORAGE_EXCEPTION writes should get while Pebble cannot write
// (its background flushes fail, typically on a full disk), or nil. Refusing writes then
// keeps memtables from filling up, which would stall the writer inside Pebble.
func (s *Store) WriteError() error {
	if _, last := s.bg.state(); last != nil {
		return ferr.New(ferr.KvStorageException, "the kv store cannot write: %v", last)
	}
	return nil
}

// MediaError returns the error of Pebble's last failed flush when the disk reported it as a
// media error (EIO; diskwatch.IsMediaError) and no flush succeeded since, else nil. The
// tablet server hands the primary-key buckets it leads to other replicas while it is set
// (docs/cluster.md, "Gray failures"); a full disk (ENOSPC) is not one: it frees up in place.
func (s *Store) MediaError() error {
	if _, last := s.bg.state(); last != nil && diskwatch.IsMediaError(last) {
		return last
	}
	return nil
}

// WriteError is Store.WriteError for the tablet's store; a tablet that is offline (repair.go)
// reports that instead. PUT_KV calls it before Put.
func (t *Tablet) WriteError() error {
	if err := t.offlineError(); err != nil {
		return err
	}
	return t.store.WriteError()
}
