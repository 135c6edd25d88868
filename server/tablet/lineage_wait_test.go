package tablet

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stromdb/strom/server/cluster"
)

// listingControl is a ReplicationControl whose lineages are read per bucket or per table,
// counting both.
type listingControl struct {
	cluster.ReplicationControl // nil: only the lineage methods are called

	mu       sync.Mutex
	lineages map[cluster.Bucket]cluster.Lineage
	noLister bool

	perBucket, perTable atomic.Int64
}

func (c *listingControl) publish(b cluster.Bucket, l cluster.Lineage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lineages[b] = l
}

func (c *listingControl) Lineage(_ context.Context, b cluster.Bucket) (cluster.Lineage, bool, error) {
	c.perBucket.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lineages[b]
	return l, ok, nil
}

func (c *listingControl) TableLineages(_ context.Context, table, partition int64) (map[cluster.Bucket]cluster.Lineage, error) {
	c.perTable.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[cluster.Bucket]cluster.Lineage{}
	for b, l := range c.lineages {
		if b.TableID == table && b.PartitionID == partition {
			out[b] = l
		}
	}
	return out, nil
}

// onlyPerBucket hides TableLineages.
type onlyPerBucket struct{ *listingControl }

func (o onlyPerBucket) TableLineages() {}

func lin(epoch int32) cluster.Lineage {
	return cluster.Lineage{LeaderEpoch: epoch, Entries: []cluster.EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: epoch, StartOffset: 7}}}
}

// A herd of followers waiting for lineages not yet published (a failover of a node leading
// many buckets) is served by range reads per table, not one etcd read per follower and round;
// each follower gets the lineage of exactly its own epoch, a newer one answers it as stale,
// and a cancelled wait returns its context's error.
func TestLineageWaiterReadsPerTable(t *testing.T) {
	ctl := &listingControl{lineages: map[cluster.Bucket]cluster.Lineage{}}
	w := newLineageWaiter(ctl, slog.New(slog.DiscardHandler))
	const tables, perTable = 3, 200
	type result struct {
		b     cluster.Bucket
		l     cluster.Lineage
		stale bool
		err   error
	}
	results := make(chan result, tables*perTable)
	for tb := range tables {
		for i := range perTable {
			b := cluster.Bucket{TableID: int64(tb + 1), PartitionID: cluster.NoPartition, Bucket: int32(i)}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				l, stale, err := w.wait(ctx, b, 5)
				results <- result{b, l, stale, err}
			}()
		}
	}
	time.Sleep(100 * time.Millisecond) // several rounds find nothing
	// An older epoch's lineage does not answer; a newer one answers as stale.
	for tb := range tables {
		for i := range perTable {
			b := cluster.Bucket{TableID: int64(tb + 1), PartitionID: cluster.NoPartition, Bucket: int32(i)}
			switch {
			case i == 0:
				ctl.publish(b, lin(6))
			case i%2 == 0:
				ctl.publish(b, lin(4))
			default:
				ctl.publish(b, lin(5))
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	for tb := range tables {
		for i := 2; i < perTable; i += 2 {
			ctl.publish(cluster.Bucket{TableID: int64(tb + 1), PartitionID: cluster.NoPartition, Bucket: int32(i)}, lin(5))
		}
	}
	for range tables * perTable {
		r := <-results
		switch {
		case r.err != nil:
			t.Fatalf("%v: %v", r.b, r.err)
		case r.b.Bucket == 0:
			if !r.stale {
				t.Errorf("%v: a newer epoch's lineage did not answer as stale: %+v", r.b, r.l)
			}
		case r.stale || r.l.LeaderEpoch != 5 || len(r.l.Entries) != 2:
			t.Errorf("%v: got %+v stale %v, want epoch 5's lineage", r.b, r.l, r.stale)
		}
	}
	if n := ctl.perBucket.Load(); n > tables*lineageRangeMin*20 {
		t.Errorf("%d per-bucket reads for %d waiting followers: the herd was not batched", n, tables*perTable)
	}
	w.mu.Lock()
	rounds := w.rounds
	w.mu.Unlock()
	if got, most := ctl.perTable.Load(), int64(tables*(rounds+1)); got == 0 || got > most {
		t.Errorf("%d table reads in %d rounds of %d tables", got, rounds, tables)
	}

	// A cancelled wait ends with its context's error, and the waiter's goroutine stops once
	// nobody waits.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := w.wait(ctx, cluster.Bucket{TableID: 9, PartitionID: cluster.NoPartition}, 1); err == nil {
		t.Fatal("a wait for a lineage never published returned without error")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lineage waiter kept running with nobody waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without a LineageLister the waiter reads per bucket, and still answers every follower.
func TestLineageWaiterWithoutLister(t *testing.T) {
	ctl := &listingControl{lineages: map[cluster.Bucket]cluster.Lineage{}}
	w := newLineageWaiter(onlyPerBucket{ctl}, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	for i := range 20 {
		b := cluster.Bucket{TableID: 1, PartitionID: cluster.NoPartition, Bucket: int32(i)}
		ctl.publish(b, lin(2))
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if l, stale, err := w.wait(ctx, b, 2); err != nil || stale || l.LeaderEpoch != 2 {
				t.Errorf("%v: %+v %v %v", b, l, stale, err)
			}
		}()
	}
	wg.Wait()
	if ctl.perTable.Load() != 0 || ctl.perBucket.Load() < 20 {
		t.Errorf("per table %d, per bucket %d", ctl.perTable.Load(), ctl.perBucket.Load())
	}
}
