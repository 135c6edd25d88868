package rest

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"github.com/stromdb/strom/fluss"
)

// partitionID resolves ?partition=NAME of a partitioned table (fluss.NoPartition for one
// that is not partitioned; an error when a partitioned table gets no name).
func partitionID(ctx context.Context, c *fluss.Connection, t *fluss.Table, name string) (int64, error) {
	info := t.Info()
	if !info.IsPartitioned() {
		if name != "" {
			return 0, badRequest(fluss.ErrTableNotPartitioned, fmt.Sprintf("%s is not partitioned", t.Path()))
		}
		return fluss.NoPartition, nil
	}
	if name == "" {
		return 0, badRequest(fluss.ErrInvalidPartitionSpec, "the table is partitioned: name one with ?partition= (see .../partitions)")
	}
	parts, err := c.Admin().ListPartitionInfos(ctx, t.Path(), nil)
	if err != nil {
		return 0, err
	}
	for _, p := range parts {
		if p.Name == name {
			return p.ID, nil
		}
	}
	return 0, &apiError{status: http.StatusNotFound, code: fluss.ErrPartitionNotExists,
		msg: fmt.Sprintf("%s has no partition %q", t.Path(), name)}
}

// scan answers up to ?limit= rows (default 100) with LIMIT_SCAN, bucket after bucket (or
// of one ?bucket=): a primary-key table's current rows, a log table's last rows per bucket.
func (g *Gateway) scan(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 100, 1, int64(g.opts.MaxRows))
	if err != nil {
		return err
	}
	bucket, err := intParam(r, "bucket", -1, 0, math.MaxInt32)
	if err != nil {
		return err
	}
	t, err := c.Table(ctx, tablePath(r))
	if err != nil {
		return err
	}
	pid, err := partitionID(ctx, c, t, r.URL.Query().Get("partition"))
	if err != nil {
		return err
	}
	info := t.Info()
	buckets := []int32{int32(bucket)}
	if bucket < 0 {
		buckets = buckets[:0]
		for b := range info.NumBuckets() {
			buckets = append(buckets, b)
		}
	} else if int32(bucket) >= info.NumBuckets() {
		return badRequest(fluss.ErrUnknownTableOrBucket, fmt.Sprintf("bucket %d: the table has %d buckets", bucket, info.NumBuckets()))
	}
	var rows []fluss.Row
	for _, b := range buckets {
		left := int(limit) - len(rows)
		if left <= 0 {
			break
		}
		sc, err := t.NewScan().Limit(left).CreateBucketBatchScanner(fluss.NewPartitionBucket(info.TableID, pid, b))
		if err != nil {
			return err
		}
		got, err := sc.Rows(ctx)
		if err != nil {
			return err
		}
		rows = append(rows, got[:min(len(got), left)]...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows": rowsJSON(info.Schema().Columns, rows)})
	return nil
}
