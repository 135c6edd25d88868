package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

// tailRecord is one line of `strom tail --json`.
type tailRecord struct {
	ChangeType string  `json:"change_type"`
	Partition  string  `json:"partition,omitempty"`
	Bucket     int32   `json:"bucket"`
	Offset     int64   `json:"offset"`
	Timestamp  string  `json:"timestamp"`
	Row        *object `json:"row"`
}

func (a *app) tailCommand() *cobra.Command {
	var (
		from    string
		limit   int
		idle    time.Duration
		buckets []int32
	)
	cmd := &cobra.Command{
		Use:   "tail DATABASE.TABLE",
		Short: "Follow a table's log (or a primary-key table's changelog)",
		Long: `Print the records of a table as they arrive: for a log table its rows (+A), for a
primary-key table its changelog (+I insert, -U/+U the row before/after an update, -D delete).
Every line carries the change type, bucket, offset and commit time. It follows until
interrupted, unless --limit or --idle says when to stop.

--from picks where each bucket starts: earliest, latest (only new records; the default), or a
time (RFC 3339 such as 2026-01-02T15:04:05Z, or epoch milliseconds): the first record
committed at or after it. Partitioned tables are read in the partitions that exist when the
command starts.`,
		Example: `  strom tail shop.orders                       # new changes, until Ctrl-C
  strom tail shop.orders --from earliest --json --idle 2s > changes.jsonl
  strom tail shop.clicks --from 2026-01-02T00:00:00Z --limit 100`,
		Args:              exactArgs(1, "DATABASE.TABLE"),
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, _, table, err := a.openTable(ctx, args[0])
			if err != nil {
				return err
			}
			sc, partitions, err := a.subscribe(ctx, conn, table, from, buckets)
			if err != nil {
				return err
			}
			defer sc.Close()
			cols := table.Info().Schema().Columns
			n := 0
			lastRecord := time.Now()
			for limit <= 0 || n < limit {
				wait := time.Second
				if idle > 0 {
					wait = min(wait, max(idle-time.Since(lastRecord), time.Millisecond))
				}
				recs, err := sc.Poll(ctx, wait)
				if err != nil {
					if errors.Is(err, context.Canceled) {
						return nil // Ctrl-C ends a follow normally
					}
					return err
				}
				if len(recs) == 0 {
					if idle > 0 && time.Since(lastRecord) >= idle {
						return nil
					}
					continue
				}
				lastRecord = time.Now()
				for _, r := range recs {
					if limit > 0 && n >= limit {
						break
					}
					if err := a.printRecord(cols, partitions, r); err != nil {
						return err
					}
					n++
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "latest", "where to start: earliest, latest, or a time (RFC 3339 or epoch ms)")
	f.IntVar(&limit, "limit", 0, "stop after this many records (0: no limit)")
	f.DurationVar(&idle, "idle", 0, "stop when no record arrived for this long (0: follow forever)")
	f.Int32SliceVar(&buckets, "bucket", nil, "read only these buckets (default all)")
	return cmd
}

// subscribe subscribes a scanner to the table's buckets (of every partition) at --from.
func (a *app) subscribe(ctx context.Context, conn *fluss.Connection, table *fluss.Table, from string, only []int32) (*fluss.LogScanner, map[int64]string, error) {
	info := table.Info()
	path := table.Path()
	buckets := only
	if len(buckets) == 0 {
		for b := int32(0); b < info.NumBuckets(); b++ {
			buckets = append(buckets, b)
		}
	}
	for _, b := range buckets {
		if b < 0 || b >= info.NumBuckets() {
			return nil, nil, usagef("--bucket %d: %s has buckets 0..%d", b, path, info.NumBuckets()-1)
		}
	}
	var at int64 = fluss.LatestOffset
	byTime := false
	switch from {
	case "earliest":
		at = fluss.EarliestOffset
	case "latest":
	default:
		ts, err := parseWhen(from)
		if err != nil {
			return nil, nil, usagef("--from %q: want earliest, latest, RFC 3339 time or epoch milliseconds", from)
		}
		at, byTime = ts, true
	}
	sc, err := table.NewScan().CreateLogScanner()
	if err != nil {
		return nil, nil, err
	}
	admin := conn.Admin()
	partitions := map[int64]string{}
	if !info.IsPartitioned() {
		offsets := map[int32]int64{}
		if byTime {
			if offsets, err = admin.ListOffsets(ctx, path, buckets, fluss.OffsetAtTimestamp(at)); err != nil {
				sc.Close()
				return nil, nil, err
			}
		} else {
			for _, b := range buckets {
				offsets[b] = at
			}
		}
		if err := sc.SubscribeBuckets(ctx, offsets); err != nil {
			sc.Close()
			return nil, nil, err
		}
		return sc, partitions, nil
	}
	parts, err := admin.ListPartitionInfos(ctx, path, nil)
	if err != nil {
		sc.Close()
		return nil, nil, err
	}
	offsets := map[fluss.PartitionBucket]int64{}
	for _, p := range parts {
		partitions[p.ID] = p.Name
		var byBucket map[int32]int64
		if byTime {
			if byBucket, err = admin.ListPartitionOffsets(ctx, path, p.Name, buckets, fluss.OffsetAtTimestamp(at)); err != nil {
				sc.Close()
				return nil, nil, err
			}
		}
		for _, b := range buckets {
			off := at
			if byTime {
				off = byBucket[b]
			}
			offsets[fluss.PartitionBucket{PartitionID: p.ID, Bucket: b}] = off
		}
	}
	if len(offsets) > 0 {
		if err := sc.SubscribePartitionBuckets(ctx, offsets); err != nil {
			sc.Close()
			return nil, nil, err
		}
	}
	return sc, partitions, nil
}

// parseWhen parses an RFC 3339 time or epoch milliseconds.
func parseWhen(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

func (a *app) printRecord(cols []fluss.Column, partitions map[int64]string, r fluss.ScanRecord) error {
	rec := tailRecord{
		ChangeType: r.ChangeType.ShortString(),
		Partition:  partitions[r.Bucket.PartitionID],
		Bucket:     r.Bucket.Bucket,
		Offset:     r.Offset,
		Timestamp:  time.UnixMilli(r.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Row:        rowJSON(cols, r.Row),
	}
	if a.json {
		b, err := marshal(rec)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.io.Out, "%s\n", b)
		return err
	}
	row, err := marshal(rec.Row)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("bucket=%d", rec.Bucket)
	if rec.Partition != "" {
		where = fmt.Sprintf("partition=%s %s", rec.Partition, where)
	}
	_, err = fmt.Fprintf(a.io.Out, "%s %s offset=%d %s %s\n", rec.ChangeType, where, rec.Offset, rec.Timestamp, row)
	return err
}
