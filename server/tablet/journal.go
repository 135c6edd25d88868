package tablet

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/stromdb/strom/server/journal"
)

// openJournal opens the server-wide journal of the data directory when log.journal.mode is
// auto (and log.flush.interval 0), or when a journal directory exists from an earlier run
// (whatever it holds must reach the bucket directories before their logs open, even with
// the journal now off). Otherwise it returns nil.
func openJournal(opts Options, log *slog.Logger) (*journal.Journal, error) {
	on := opts.Config.LogJournal && opts.Config.LogFlushInterval <= 0
	if !on {
		if _, err := os.Stat(filepath.Join(opts.DataDir, "journal")); err != nil {
			return nil, nil
		}
	}
	j, err := journal.Open(opts.DataDir, journal.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if !on {
		// Recovered and handed over; an unused journal is not kept open.
		if err := j.Close(); err != nil {
			return nil, fmt.Errorf("close journal: %w", err)
		}
		if err := os.RemoveAll(filepath.Join(opts.DataDir, "journal")); err != nil {
			return nil, fmt.Errorf("remove the unused journal: %w", err)
		}
		return nil, nil
	}
	return j, nil
}

func closeJournal(j *journal.Journal) error {
	if j == nil {
		return nil
	}
	return j.Close()
}
