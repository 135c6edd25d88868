package tablet

import (
	"errors"
	"fmt"
	"sync"

	"github.com/stromdb/strom/server/cluster"
)

// applyParallelism bounds how many buckets' states one ApplyBucketStates call applies at
// once. Applying a state is mostly waiting: an etcd round trip (the lineage compare-and-swap
// of a new leader), a log-epoch checkpoint fsync, the directory creation of a new replica.
// Serially a node applied ~25–45 states per second (docs/cluster.md, "Scale"); 32 in flight
// keep the two etcd round trips of many buckets in one etcd batch without letting one call
// start an unbounded number of goroutines.
const applyParallelism = 32

// applyPerBucket calls apply for every update, at most workers at a time, and returns the
// errors joined in the order of updates (each prefixed with its bucket).
//
// Invariant: the updates of one bucket are applied one after another, in the order they
// appear in updates, by one worker; updates of distinct buckets may run concurrently. A
// bucket's later state therefore never overtakes its earlier one (cluster.BucketState.Newer
// would ignore it, but an overtaken earlier state would then be applied on top of it).
func applyPerBucket(updates []cluster.BucketUpdate, workers int, apply func(cluster.BucketUpdate) error) error {
	if len(updates) == 0 {
		return nil
	}
	// chains[i] lists the indexes of one bucket's updates in their order; chains are in the
	// order of their bucket's first update.
	var chains [][]int
	chainOf := make(map[cluster.Bucket]int, len(updates))
	for i, u := range updates {
		c, ok := chainOf[u.Bucket]
		if !ok {
			c = len(chains)
			chainOf[u.Bucket] = c
			chains = append(chains, nil)
		}
		chains[c] = append(chains[c], i)
	}
	errs := make([]error, len(updates))
	run := func(chain []int) {
		for _, i := range chain {
			if err := apply(updates[i]); err != nil {
				errs[i] = fmt.Errorf("%s: %w", updates[i].Bucket, err)
			}
		}
	}
	workers = max(1, min(workers, len(chains)))
	if workers == 1 {
		for _, c := range chains {
			run(c)
		}
		return errors.Join(errs...)
	}
	next := make(chan []int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				run(c)
			}
		}()
	}
	for _, c := range chains {
		next <- c
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
