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
		from, format string
		limit        int
		idle         time.Duration
		buckets      []int32
		exitAtEnd    bool
	)
	cmd := &cobra.Command{
		Use:   "tail DATABASE.TABLE",
		Short: "Follow a table's log (or a primary-key table's changelog)",
		Long: `Print the records of a table as they arrive: for a log table its rows (+A), for a
primary-key table its changelog (+I insert, -U/+U the row before/after an update, -D delete).
Every line carries the change type, bucket, offset and commit time. It follows until
interrupted, unless --limit, --idle or --exit-at-end says when to stop.

--from picks where each bucket starts: earliest, latest (only new records; the default), or a
time (RFC 3339 such as 2026-01-02T15:04:05Z, or epoch milliseconds): the first record
committed at or after it. Partitioned tables are read in the partitions that exist when the
command starts.

--exit-at-end (-e) stops once every bucket reached the end its log had when the command
started (records appended later are not printed), like kcat -e.

--format (-f) prints each record by a template instead (no newline unless it has one):
  %v  the row as a JSON object         %k  the primary key as a JSON object ({} for a log table)
  %t  change type (+A +I -U +U -D)     %o  offset
  %b  bucket                           %p  partition name (empty if not partitioned)
  %T  commit time, RFC 3339 (UTC, ms)  %d  commit time, epoch milliseconds
  %{COLUMN}  one column's value: strings bare, NULL as NULL, the rest as JSON
  %%  a percent sign                   \n \t \\  newline, tab, backslash`,
		Example: `  strom tail shop.orders                       # new changes, until Ctrl-C
  strom tail shop.orders --from earliest --json --idle 2s > changes.jsonl
  strom tail shop.orders --from earliest -e     # what is there now, then exit
  strom tail shop.orders --from earliest -e -f '%k %v\n'
  strom tail shop.orders -f '%t %{id} %{item}\n'
  strom tail shop.clicks --from 2026-01-02T00:00:00Z --limit 100`,
		Args:              exactArgs(1, "DATABASE.TABLE"),
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, _, table, err := a.openTable(ctx, args[0])
			if err != nil {
				return err
			}
			info := table.Info()
			cols := info.Schema().Columns
			pk := keyIndexes(cols, info.PrimaryKeys())
			var tmpl recordFormat
			if format != "" {
				if a.json {
					return usagef("--format and --json exclude each other")
				}
				if tmpl, err = parseRecordFormat(format, cols); err != nil {
					return usageError{fmt.Errorf("--format: %w", err)}
				}
			}
			sub, err := a.subscribe(ctx, conn, table, from, buckets, exitAtEnd)
			if err != nil {
				return err
			}
			defer sub.sc.Close()
			n := 0
			lastRecord := time.Now()
			for (limit <= 0 || n < limit) && !(exitAtEnd && len(sub.ends) == 0) {
				wait := time.Second
				if idle > 0 {
					wait = min(wait, max(idle-time.Since(lastRecord), time.Millisecond))
				}
				recs, err := sub.sc.Poll(ctx, wait)
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
					if exitAtEnd && !sub.before(r) {
						continue // appended after the start: past the end this tail stops at
					}
					if tmpl != nil {
						err = a.printFormatted(tmpl, cols, pk, sub.partitions, r)
					} else {
						err = a.printRecord(cols, sub.partitions, r)
					}
					if err != nil {
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
	f.BoolVarP(&exitAtEnd, "exit-at-end", "e", false, "stop when every bucket reached its end offset as of the start")
	f.StringVarP(&format, "format", "f", "", "print each record by this template (%v row, %k key, %t %b %p %o %T %d, %{COLUMN}; see above)")
	f.Int32SliceVar(&buckets, "bucket", nil, "read only these buckets (default all)")
	return cmd
}

// subscription is a scanner subscribed to a table's buckets, and, for --exit-at-end, where
// each bucket's log ended when it started.
type subscription struct {
	sc         *fluss.LogScanner
	partitions map[int64]string // partition id -> name
	// ends holds the buckets still short of their end: the end offset (high watermark) each
	// had at the start. A bucket leaves it when its record at end-1 arrives; an empty map
	// means every bucket is at its end.
	ends map[fluss.PartitionBucket]int64
}

// before reports whether r lies before its bucket's end, and notes the bucket done when r
// is its last record before the end.
func (s *subscription) before(r fluss.ScanRecord) bool {
	key := fluss.PartitionBucket{PartitionID: r.Bucket.PartitionID, Bucket: r.Bucket.Bucket}
	end, ok := s.ends[key]
	if !ok || r.Offset >= end {
		return false
	}
	if r.Offset >= end-1 {
		delete(s.ends, key)
	}
	return true
}

// subscribe subscribes a scanner to the table's buckets (of every partition) at --from; with
// withEnds it also records where each bucket ends now.
func (a *app) subscribe(ctx context.Context, conn *fluss.Connection, table *fluss.Table, from string, only []int32, withEnds bool) (*subscription, error) {
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
			return nil, usagef("--bucket %d: %s has buckets 0..%d", b, path, info.NumBuckets()-1)
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
			return nil, usagef("--from %q: want earliest, latest, RFC 3339 time or epoch milliseconds", from)
		}
		at, byTime = ts, true
	}
	admin := conn.Admin()
	sub := &subscription{partitions: map[int64]string{}}
	// starts and ends of one partition's buckets ("" and NoPartition: not partitioned).
	plan := func(partition string, pid int64) (map[int32]int64, error) {
		list := func(spec fluss.OffsetSpec) (map[int32]int64, error) {
			if partition == "" {
				return admin.ListOffsets(ctx, path, buckets, spec)
			}
			return admin.ListPartitionOffsets(ctx, path, partition, buckets, spec)
		}
		var ends map[int32]int64
		if withEnds {
			var err error
			if ends, err = list(fluss.OffsetLatest()); err != nil {
				return nil, err
			}
		}
		starts := map[int32]int64{}
		switch {
		case byTime:
			var err error
			if starts, err = list(fluss.OffsetAtTimestamp(at)); err != nil {
				return nil, err
			}
		case at == fluss.EarliestOffset && withEnds:
			// The resolved start, so that a bucket emptied by retention counts as at its end.
			var err error
			if starts, err = list(fluss.OffsetEarliest()); err != nil {
				return nil, err
			}
		default:
			for _, b := range buckets {
				starts[b] = at
			}
		}
		for _, b := range buckets {
			if withEnds && at != fluss.LatestOffset && starts[b] < ends[b] {
				if sub.ends == nil {
					sub.ends = map[fluss.PartitionBucket]int64{}
				}
				sub.ends[fluss.PartitionBucket{PartitionID: pid, Bucket: b}] = ends[b]
			}
		}
		return starts, nil
	}
	sc, err := table.NewScan().CreateLogScanner()
	if err != nil {
		return nil, err
	}
	sub.sc = sc
	if !info.IsPartitioned() {
		offsets, err := plan("", fluss.NoPartition)
		if err == nil {
			err = sc.SubscribeBuckets(ctx, offsets)
		}
		if err != nil {
			sc.Close()
			return nil, err
		}
		return sub, nil
	}
	parts, err := admin.ListPartitionInfos(ctx, path, nil)
	if err != nil {
		sc.Close()
		return nil, err
	}
	offsets := map[fluss.PartitionBucket]int64{}
	for _, p := range parts {
		sub.partitions[p.ID] = p.Name
		byBucket, err := plan(p.Name, p.ID)
		if err != nil {
			sc.Close()
			return nil, err
		}
		for _, b := range buckets {
			offsets[fluss.PartitionBucket{PartitionID: p.ID, Bucket: b}] = byBucket[b]
		}
	}
	if len(offsets) > 0 {
		if err := sc.SubscribePartitionBuckets(ctx, offsets); err != nil {
			sc.Close()
			return nil, err
		}
	}
	return sub, nil
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
