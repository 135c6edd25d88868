package meta

import (
	"context"
	"errors"
	"fmt"

	"github.com/stromdb/strom/internal/formatver"
)

// FormatKey holds the version of the cluster's etcd records: every JSON record under
// KeyPrefix is of the version this key names (docs/durability.md, "Versioned formats").
const FormatKey = "format"

// RecordsFormat is the format of the JSON records Strom keeps in etcd.
var RecordsFormat = formatver.Format{Name: "strom-etcd-records", Current: 1, Supported: []int{1}}

// CheckFormat checks the version of the cluster's etcd records before a server reads any of
// them, and records the current version in a cluster that has none yet (a new cluster, or
// one created before records were versioned, whose records are version 1). A version this
// binary does not read is refused with formatver.ErrUnsupported.
func CheckFormat(ctx context.Context, s Store) error {
	for {
		v, err := s.Get(ctx, FormatKey)
		switch {
		case errors.Is(err, ErrNotFound):
			rec := fmt.Appendf(nil, `{"format":%q,"format_version":%d}`, RecordsFormat.Name, formatver.LegacyVersion)
			ok, err := s.Txn(ctx, []Cond{{Key: FormatKey, Exists: false}}, []Op{Put(FormatKey, rec)})
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
