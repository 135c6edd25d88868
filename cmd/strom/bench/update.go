package bench

import (
	"context"
	"fmt"

	"github.com/stromdb/strom/internal/wire"
)

// Seeds of the values later workloads write over the upserted keys: each differs from the
// upsert's, so every record really changes its row.
const (
	updateSeedOffset  = 1
	partialSeedOffset = 2
	mixedSeedOffset   = 3
)

// runUpdate writes new values for every key the upsert wrote (all columns): the merge reads
// an existing row per key and the changelog carries -U/+U pairs, unlike upsert's +I.
func runUpdate(ctx context.Context, s *session) (Result, error) {
	return runRewrite(ctx, s, ModeUpdate, kvWrite{seed: s.cfg.Seed + updateSeedOffset})
}

// runPartialUpdate writes the first PartialColumns columns (the key included) of every
// upserted key as a partial update (PUT_KV target_columns); the server merges them into the
// stored rows.
func runPartialUpdate(ctx context.Context, s *session) (Result, error) {
	n := min(s.cfg.PartialColumns, s.cfg.Columns)
	if n < 2 || n >= s.cfg.Columns {
		return Result{}, fmt.Errorf("partial-update: needs 2 <= -partial-columns < -columns, have %d of %d", s.cfg.PartialColumns, s.cfg.Columns)
	}
	targets := make([]int, n)
	for i := range targets {
		targets[i] = i
	}
	r, err := runRewrite(ctx, s, ModePartialUpdate, kvWrite{seed: s.cfg.Seed + partialSeedOffset, targets: targets})
	r.TargetColumns = targets
	return r, err
}

// runRewrite sends a PUT_KV workload over keys 0..Rows-1 of the loaded primary-key table.
func runRewrite(ctx context.Context, s *session, mode Mode, w kvWrite) (Result, error) {
	cfg := s.cfg
	t, err := s.table(ctx, true)
	if err != nil {
		return Result{}, err
	}
	if t.loaded < cfg.Rows {
		return Result{}, fmt.Errorf("%s: the primary-key table holds %d of the %d keys (run upsert first)", mode, t.loaded, cfg.Rows)
	}
	reqs, err := prepareKv(cfg, t, w)
	if err != nil {
		return Result{}, fmt.Errorf("%s: prepare: %w", mode, err)
	}
	tl, elapsed, truncated, err := drive(ctx, cfg, t.servers, wire.PutKv, reqs, checkPutKv)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", mode, err)
	}
	r := tl.result(mode, elapsed)
	r.Truncated = truncated
	r.fill(cfg, t)
	r.BatchRows = cfg.BatchRows
	return r, nil
}
