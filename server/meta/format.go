package meta

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stromdb/strom/internal/formatver"
)

// FormatKey holds the version of the cluster's etcd records: every JSON record under
// KeyPrefix is of the version this key names (docs/durability.md, "Versioned formats").
const FormatKey = "format"

// formatRetryFor bounds how long CheckFormat retries errors of an etcd election in
// progress; formatRetryInterval is the wait between tries. Variables for tests.
var (
	formatRetryFor      = 30 * time.Second
	formatRetryInterval = 100 * time.Millisecond
)

// RecordsFormat is the format of the JSON records Strom keeps in etcd.
var RecordsFormat = formatver.Format{Name: "strom-etcd-records", Current: 1, Supported: []int{1}}

// CheckFormat checks the version of the cluster's etcd records before a server reads any of
// them, and records the current version in a cluster that has none yet (a new cluster, or
// one created before records were versioned, whose records are version 1). A version this
// binary does not read is refused with formatver.ErrUnsupported.
//
// It is the first request a starting member sends, often while the new etcd cluster still
// elects its first leader (or re-elects under load): an error of an election in progress
// (transientEtcd) is retried every formatRetryInterval for up to formatRetryFor, instead of
// failing the start (it did: "meta get format: etcdserver: leader changed", a 3-node
// start under load).
func CheckFormat(ctx context.Context, s Store) error {
	giveUp := time.Now().Add(formatRetryFor)
	retry := func(err error) bool {
		if !transientEtcd(err) || time.Now().After(giveUp) {
			return false
		}
		t := time.NewTimer(formatRetryInterval)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for {
		v, err := s.Get(ctx, FormatKey)
		switch {
		case retry(err):
			continue
		case errors.Is(err, ErrNotFound):
			rec := fmt.Appendf(nil, `{"format":%q,"format_version":%d}`, RecordsFormat.Name, formatver.LegacyVersion)
			ok, err := s.Txn(ctx, []Cond{{Key: FormatKey, Exists: false}}, []Op{Put(FormatKey, rec)})
			if retry(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("meta: record format version: %w", err)
			}
			if ok {
				return nil
			}
			continue // another server wrote it first: check what it wrote
		case err != nil:
			return fmt.Errorf("meta: read format version: %w", err)
		}
		_, err = formatver.RecordVersion("etcd key "+KeyPrefix+FormatKey, v, RecordsFormat)
		return err
	}
}
