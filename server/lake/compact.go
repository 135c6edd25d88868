package lake

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/stromdb/strom/internal/metadata"
)

// autoCompaction reports table.datalake.auto-compaction (default false).
func autoCompaction(d *metadata.TableDescriptor) bool {
	return strings.EqualFold(strings.TrimSpace(d.Properties[metadata.PropDatalakeAutoCompaction]), "true")
}

// compact rewrites the small data files of tbl (iceberg-go's compaction planner with its
// defaults: at least 5 files per partition, target 512 MiB), applying the deletes that cover
// them and dropping equality deletes that no longer cover any live file, in one snapshot that
// carries the round's summary properties — the same commit-user and offsets file, as Fluss
// commits its rewrite — so the newest tiering snapshot still names the tiered offsets. It
// returns tbl unchanged when there is nothing to compact.
func compact(ctx context.Context, tbl *table.Table, props iceberg.Properties) (*table.Table, int, error) {
	plan, err := compaction.Analyze(ctx, tbl, compaction.DefaultConfig())
	if err != nil {
		return nil, 0, fmt.Errorf("plan compaction: %w", err)
	}
	if len(plan.Groups) == 0 {
		return tbl, 0, nil
	}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	rewritten := map[string]struct{}{}
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
		for _, task := range g.Tasks {
			rewritten[task.File.FilePath()] = struct{}{}
		}
	}
	opts := table.RewriteDataFilesOptions{SnapshotProps: props}
	if snap := tbl.CurrentSnapshot(); snap != nil {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, 0, err
		}
		dead, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fs, tbl.Metadata(), snap, rewritten)
		if err != nil {
			return nil, 0, fmt.Errorf("collect dead equality deletes: %w", err)
		}
		opts.ExtraDeleteFilesToRemove = dead
	}
	tx := tbl.NewTransaction()
	res, err := tx.RewriteDataFiles(ctx, groups, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("rewrite data files: %w", err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("commit compaction: %w", err)
	}
	return out, res.RemovedDataFiles, nil
}
