package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

// bucketOffsets is one row of `strom offsets`.
type bucketOffsets struct {
	Partition string `json:"partition,omitempty"`
	Bucket    int32  `json:"bucket"`
	Earliest  int64  `json:"earliest"`
	Latest    int64  `json:"latest"`
	Records   int64  `json:"records"`
	At        *int64 `json:"at,omitempty"`
}

func (a *app) offsetsCommand() *cobra.Command {
	var at string
	cmd := &cobra.Command{
		Use:   "offsets DATABASE.TABLE",
		Short: "Show each bucket's earliest and latest offset",
		Long: `Show, for every bucket (of every partition), the earliest offset still stored, the latest
offset (the high watermark: the offset the next record gets) and the number of records in
between. With --at, also the first offset committed at or after a time.`,
		Example: `  strom offsets shop.orders
  strom offsets shop.orders --at 2026-01-02T00:00:00Z --json`,
		Args:              exactArgs(1, "DATABASE.TABLE"),
		ValidArgsFunction: a.completeTables,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path, err := tablePath(args[0])
			if err != nil {
				return err
			}
			var atMs int64
			if at != "" {
				if atMs, err = parseWhen(at); err != nil {
					return usagef("--at %q: want an RFC 3339 time or epoch milliseconds", at)
				}
			}
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			admin := conn.Admin()
			info, err := admin.GetTableInfo(ctx, path)
			if err != nil {
				return a.didYouMean(ctx, path, err)
			}
			buckets := make([]int32, info.NumBuckets())
			for i := range buckets {
				buckets[i] = int32(i)
			}
			list := func(partition string, spec fluss.OffsetSpec) (map[int32]int64, error) {
				if partition == "" {
					return admin.ListOffsets(ctx, path, buckets, spec)
				}
				return admin.ListPartitionOffsets(ctx, path, partition, buckets, spec)
			}
			partitions := []string{""}
			if info.IsPartitioned() {
				parts, err := admin.ListPartitionInfos(ctx, path, nil)
				if err != nil {
					return err
				}
				partitions = partitions[:0]
				for _, p := range parts {
					partitions = append(partitions, p.Name)
				}
				sortStrings(partitions)
			}
			out := []bucketOffsets{}
			for _, p := range partitions {
				rows, err := a.offsetsOf(ctx, p, buckets, list, at != "", atMs)
				if err != nil {
					return err
				}
				out = append(out, rows...)
			}
			if a.json {
				return printJSON(a.io.Out, out)
			}
			headers := []string{"BUCKET", "EARLIEST", "LATEST", "RECORDS"}
			if info.IsPartitioned() {
				headers = append([]string{"PARTITION"}, headers...)
			}
			if at != "" {
				headers = append(headers, "AT "+at)
			}
			var rows [][]string
			for _, o := range out {
				r := []string{itoa(o.Bucket), itoa(o.Earliest), itoa(o.Latest), itoa(o.Records)}
				if info.IsPartitioned() {
					r = append([]string{o.Partition}, r...)
				}
				if o.At != nil {
					r = append(r, itoa(*o.At))
				}
				rows = append(rows, r)
			}
			return printTable(a.io.Out, headers, rows)
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "also show the first offset at or after this time (RFC 3339 or epoch ms)")
	return cmd
}

func (a *app) offsetsOf(ctx context.Context, partition string, buckets []int32,
	list func(string, fluss.OffsetSpec) (map[int32]int64, error), withAt bool, atMs int64) ([]bucketOffsets, error) {
	earliest, err := list(partition, fluss.OffsetEarliest())
	if err != nil {
		return nil, err
	}
	latest, err := list(partition, fluss.OffsetLatest())
	if err != nil {
		return nil, err
	}
	var atOffsets map[int32]int64
	if withAt {
		if atOffsets, err = list(partition, fluss.OffsetAtTimestamp(atMs)); err != nil {
			return nil, err
		}
	}
	out := make([]bucketOffsets, len(buckets))
	for i, b := range buckets {
		out[i] = bucketOffsets{Partition: partition, Bucket: b, Earliest: earliest[b], Latest: latest[b], Records: latest[b] - earliest[b]}
		if withAt {
			v := atOffsets[b]
			out[i].At = &v
		}
	}
	return out, nil
}
