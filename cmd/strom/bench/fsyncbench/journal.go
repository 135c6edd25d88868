package fsyncbench

import (
	"errors"
	"os"
	"sync"
)

// committer is a group-commit journal: appenders queue records and wait; one goroutine
// takes everything queued, writes it with one write, fdatasyncs once and wakes every
// appender of that group. Records that arrive during a sync form the next group, so the
// number of syncs per second is bounded by the disk's sync latency, not by the number of
// writers.
type committer struct {
	f  *os.File
	st *stats

	mu      sync.Mutex
	wake    *sync.Cond // the committer waits here for records or close
	pending []byte     // records queued since the last group was taken
	waiters []chan error
	closed  bool
	done    chan struct{} // closed when run has returned
}

func newCommitter(f *os.File, st *stats) *committer {
	c := &committer{f: f, st: st, done: make(chan struct{})}
	c.wake = sync.NewCond(&c.mu)
	return c
}

var errClosed = errors.New("journal closed")

// append queues record and returns once it is durable (or the journal failed).
func (c *committer) append(record []byte) error {
	ch := make(chan error, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.pending = append(c.pending, record...)
	c.waiters = append(c.waiters, ch)
	c.wake.Signal()
	c.mu.Unlock()
	return <-ch
}

// run commits groups until close; after an error every appender gets it.
func (c *committer) run() {
	defer close(c.done)
	var buf []byte
	var waiters []chan error
	for {
		c.mu.Lock()
		for len(c.waiters) == 0 && !c.closed {
			c.wake.Wait()
		}
		if len(c.waiters) == 0 { // closed and drained
			c.mu.Unlock()
			return
		}
		// Swap buffers: appenders fill the other one while this group is written.
		buf, c.pending = c.pending, buf[:0]
		waiters, c.waiters = c.waiters, waiters[:0]
		c.mu.Unlock()

		_, err := c.f.Write(buf)
		if err == nil {
			err = fdatasync(c.f)
			c.st.addSync()
		}
		for _, ch := range waiters {
			ch <- err
		}
	}
}

// close stops the committer once the groups queued so far are committed.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.wake.Signal()
	c.mu.Unlock()
	<-c.done
}
