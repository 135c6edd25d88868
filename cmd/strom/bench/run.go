package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Plan returns the modes Run performs for the requested ones, in run order: scan needs the
// rows an append writes, and lookup, update, partial-update and mixed the keys an upsert
// writes, so each pulls its writer in.
func Plan(requested []Mode) []Mode {
	want := map[Mode]bool{}
	for _, m := range requested {
		want[m] = true
	}
	if want[ModeScan] {
		want[ModeAppend] = true
	}
	if want[ModeLookup] || want[ModeUpdate] || want[ModePartialUpdate] || want[ModeMixed] {
		want[ModeUpsert] = true
	}
	var out []Mode
	for _, m := range AllModes {
		if want[m] {
			out = append(out, m)
		}
	}
	return out
}

// Run performs Plan(modes) against cfg.Bootstrap, calling report (if not nil) with each
// result as soon as it is known, and returns all results. The tables it creates are dropped
// at the end unless cfg.Keep, also when a mode fails.
func Run(ctx context.Context, cfg Config, modes []Mode, report func(Result)) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(modes) == 0 {
		return nil, fmt.Errorf("bench: no mode given")
	}
	s, err := openSession(ctx, &cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var results []Result
	var runErr error
	for _, m := range Plan(modes) {
		var r Result
		switch m {
		case ModeAppend:
			r, runErr = runAppend(ctx, s)
		case ModeScan:
			r, runErr = runScan(ctx, s)
		case ModeUpsert:
			r, runErr = runUpsert(ctx, s)
		case ModeLookup:
			r, runErr = runLookup(ctx, s)
		case ModeUpdate:
			r, runErr = runUpdate(ctx, s)
		case ModePartialUpdate:
			r, runErr = runPartialUpdate(ctx, s)
		case ModeMixed:
			r, runErr = runMixed(ctx, s)
		case ModePrefixLookup:
			r, runErr = runPrefixLookup(ctx, s)
		case ModeTiering:
			r, runErr = runTiering(ctx, s)
		}
		if runErr != nil {
			break
		}
		results = append(results, r)
		if report != nil {
			report(r)
		}
	}
	// Clean up even when ctx was cancelled, within a bounded time.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.close(cctx, cfg.Keep); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("bench: cleanup: %w", err))
	}
	if runErr != nil {
		return results, fmt.Errorf("bench: %w", runErr)
	}
	return slices.Clip(results), nil
}
