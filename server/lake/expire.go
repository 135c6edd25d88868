package lake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
)

// Snapshot expiry defaults, used when neither the table's options nor the Iceberg table's
// properties set Iceberg's retention properties (history.expire.max-snapshot-age-ms and
// history.expire.min-snapshots-to-keep). They are the retention Fluss's auto-expire gets on
// Paimon (snapshot.time-retained 1 h, snapshot.num-retained.min 10); Iceberg's own defaults
// (5 days, 1) would keep one snapshot per tiering round for five days.
const (
	DefaultMaxSnapshotAge     = time.Hour
	DefaultMinSnapshotsToKeep = 10
)

// autoExpire reports table.datalake.auto-expire-snapshot. Strom's default is true, unlike
// Fluss's false: Fluss's Iceberg tiering never expires snapshots (its option only reaches
// Paimon), and without expiry every round adds a snapshot, its manifests and — after a
// compaction — the replaced data files for good.
func autoExpire(d *metadata.TableDescriptor) bool {
	v := strings.TrimSpace(d.Properties[metadata.PropDatalakeAutoExpireSnapshot])
	return !strings.EqualFold(v, "false")
}

// retention returns the snapshot age beyond which a snapshot may expire and how many of the
// newest snapshots are always kept: Iceberg's history.expire.* properties, from the table's
// custom properties (iceberg.<property>, which is how Fluss table options reach the Iceberg
// table; read every round, so ALTER TABLE changes them) before the Iceberg table's own
// properties, else the defaults above.
func retention(d *metadata.TableDescriptor, tbl *table.Table) (time.Duration, int, error) {
	get := func(key string) (string, bool) {
		if v, ok := d.Properties["iceberg."+key]; ok {
			return v, true
		}
		if v, ok := d.CustomProperties["iceberg."+key]; ok {
			return v, true
		}
		v, ok := tbl.Properties()[key]
		return v, ok
	}
	maxAge, minKeep := DefaultMaxSnapshotAge, DefaultMinSnapshotsToKeep
	if v, ok := get(table.MaxSnapshotAgeMsKey); ok {
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms < 0 {
			return 0, 0, fmt.Errorf("%s %q: want milliseconds >= 0", table.MaxSnapshotAgeMsKey, v)
		}
		maxAge = time.Duration(ms) * time.Millisecond
	}
	if v, ok := get(table.MinSnapshotsToKeepKey); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("%s %q: want a count >= 1", table.MinSnapshotsToKeepKey, v)
		}
		minKeep = n
	}
	return maxAge, minKeep, nil
}

// expireSnapshots expires the snapshots of tbl older than the retention age, beyond the
// newest ones kept, with iceberg-go's ExpireSnapshots, which also deletes the manifests,
// manifest lists and data files only they referenced. It never expires the newest tiering
// snapshot (whose summary names the tiered offsets GET_LAKE_SNAPSHOT and the next round read):
// the count kept along the current branch reaches back to it. Afterwards it deletes the
// offsets files only expired snapshots named. It returns tbl unchanged when nothing is due.
func (t *Tierer) expireSnapshots(ctx context.Context, info *cluster.TableInfo, tbl *table.Table) (*table.Table, int, error) {
	maxAge, minKeep, err := retention(&info.Descriptor, tbl)
	if err != nil {
		return tbl, 0, err
	}
	meta := tbl.Metadata()
	snaps := meta.Snapshots()
	cutoff := t.opts.Now().Add(-maxAge).UnixMilli()
	due := false
	for _, s := range snaps {
		due = due || s.TimestampMs < cutoff
	}
	cur := tbl.CurrentSnapshot()
	if !due || len(snaps) <= minKeep || cur == nil {
		return tbl, 0, nil
	}
	keep := minKeep
	newest := newestTieringSnapshot(snaps)
	for i, s := range table.AncestorsOf(cur.SnapshotID, meta.SnapshotByID) {
		if newest != nil && s.SnapshotID == newest.SnapshotID {
			keep = max(keep, i+1)
			break
		}
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(maxAge), table.WithRetainLast(keep)); err != nil {
		return tbl, 0, fmt.Errorf("expire snapshots: %w", err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return tbl, 0, fmt.Errorf("commit snapshot expiry: %w", err)
	}
	// Offsets files: delete those named only by expired snapshots (a compaction snapshot
	// names its round's file too), and only inside this table's offsets directory.
	retained := map[string]bool{}
	for _, s := range out.Metadata().Snapshots() {
		if s.Summary != nil {
			retained[s.Summary.Properties[OffsetsProperty]] = true
		}
	}
	dir, err := t.offsetsDir(info)
	if err != nil {
		return out, 0, err
	}
	expired := 0
	for _, s := range snaps {
		if out.Metadata().SnapshotByID(s.SnapshotID) != nil {
			continue
		}
		expired++
		if s.Summary == nil {
			continue
		}
		p := s.Summary.Properties[OffsetsProperty]
		if p == "" || retained[p] || filepath.Dir(p) != dir {
			continue
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return out, expired, fmt.Errorf("remove offsets file of expired snapshot %d: %w", s.SnapshotID, err)
		}
	}
	return out, expired, nil
}

// newestTieringSnapshot is the snapshot lastTiered reads offsets from (nil if none).
func newestTieringSnapshot(snaps []table.Snapshot) *table.Snapshot {
	var best *table.Snapshot
	for i := range snaps {
		s := &snaps[i]
		if s.Summary == nil || s.Summary.Properties[CommitUserKey] != TieringUser {
			continue
		}
		if best == nil || s.SequenceNumber > best.SequenceNumber ||
			(s.SequenceNumber == best.SequenceNumber && s.TimestampMs > best.TimestampMs) {
			best = s
		}
	}
	return best
}
