// Package bucketstate holds the bucket states of a cluster as one node follows them from etcd
// (docs/cluster.md, "What is in etcd"): the key layout of buckets/… and lineage/…, and Cache, the
// states with the etcd revision each was read at.
//
// Cache only records; it decides nothing. Writers of states (the active coordinator's
// elections and moves, a leader's ISR changes) record what they wrote ahead of the watch, and
// the watch brings the same or a newer revision later.
package bucketstate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/stromdb/strom/server/cluster"
)

// Key prefixes, relative to meta.KeyPrefix.
const (
	Prefix        = "buckets/" // buckets/<table>/<partition|->/<bucket>: cluster.BucketState
	LineagePrefix = "lineage/" // lineage/<table>/<partition|->/<bucket>: cluster.Lineage
)

func suffix(b cluster.Bucket) string {
	p := "-"
	if b.PartitionID != cluster.NoPartition {
		p = strconv.FormatInt(b.PartitionID, 10)
	}
	return fmt.Sprintf("%d/%s/%d", b.TableID, p, b.Bucket)
}

// Key is the key of a bucket's state.
func Key(b cluster.Bucket) string { return Prefix + suffix(b) }

// LineageKey is the key of the leader-epoch lineage of a bucket's current leader.
func LineageKey(b cluster.Bucket) string { return LineagePrefix + suffix(b) }

func tablePrefix(prefix string, tableID, partitionID int64) string {
	if partitionID == cluster.NoPartition {
		return fmt.Sprintf("%s%d/", prefix, tableID)
	}
	return fmt.Sprintf("%s%d/%d/", prefix, tableID, partitionID)
}

// TablePrefix is the prefix of the states of a table's buckets (partitionID NoPartition:
// every bucket of the table, of every partition) or of one partition's.
func TablePrefix(tableID, partitionID int64) string {
	return tablePrefix(Prefix, tableID, partitionID)
}

// LineageTablePrefix is TablePrefix for the lineages.
func LineageTablePrefix(tableID, partitionID int64) string {
	return tablePrefix(LineagePrefix, tableID, partitionID)
}

// LineageBucketsPrefix is the prefix of the lineages of exactly one table's buckets
// (partitionID NoPartition: the unpartitioned buckets only) or one partition's: unlike
// LineageTablePrefix it does not take in a partitioned table's partitions.
func LineageBucketsPrefix(tableID, partitionID int64) string {
	k := LineageKey(cluster.Bucket{TableID: tableID, PartitionID: partitionID})
	return k[:strings.LastIndexByte(k, '/')+1]
}

// ParseKey reads the bucket of a state's key (relative to meta.KeyPrefix).
func ParseKey(key string) (cluster.Bucket, bool) { return parseKey(Prefix, key) }

// ParseLineageKey reads the bucket of a lineage's key (relative to meta.KeyPrefix).
func ParseLineageKey(key string) (cluster.Bucket, bool) { return parseKey(LineagePrefix, key) }

func parseKey(prefix, key string) (cluster.Bucket, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return cluster.Bucket{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return cluster.Bucket{}, false
	}
	t, err1 := strconv.ParseInt(parts[0], 10, 64)
	b, err2 := strconv.ParseInt(parts[2], 10, 32)
	p := cluster.NoPartition
	var err3 error
	if parts[1] != "-" {
		p, err3 = strconv.ParseInt(parts[1], 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil {
		return cluster.Bucket{}, false
	}
	return cluster.Bucket{TableID: t, PartitionID: p, Bucket: int32(b)}, true
}

// Decode reads a stored state.
func Decode(value []byte) (cluster.BucketState, error) {
	var st cluster.BucketState
	if err := json.Unmarshal(value, &st); err != nil {
		return cluster.BucketState{}, fmt.Errorf("corrupt bucket state: %w", err)
	}
	return st, nil
}

// Encode is the stored form of a state.
func Encode(st cluster.BucketState) []byte {
	val, _ := json.Marshal(st)
	return val
}

// Entry is a state and the mod revision of its key. Rev 0: written by this node and not yet
// seen by the watch (or learnt from a notification), so not usable for a compare-and-swap.
type Entry struct {
	State cluster.BucketState
	Rev   int64
}

// Cache is the bucket states a node knows. Invariant: an entry is replaced only by one of a
// higher revision (Put), or, for a notification ahead of the watch, by a Newer state that
// keeps the entry's revision (PutNewer).
type Cache struct {
	mu sync.RWMutex
	m  map[cluster.Bucket]Entry
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[cluster.Bucket]Entry{}} }

// Replace swaps the whole cache for entries (a fresh load at one revision), atomically for
// readers.
func (c *Cache) Replace(entries map[cluster.Bucket]Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = entries
}

// Change is one watched change of a state's key.
type Change struct {
	Bucket  cluster.Bucket
	State   cluster.BucketState
	Rev     int64
	Deleted bool
}

// Apply folds watched changes into the cache, all at once for readers.
func (c *Cache) Apply(changes []Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range changes {
		if ch.Deleted {
			delete(c.m, ch.Bucket)
			continue
		}
		c.putLocked(ch.Bucket, ch.State, ch.Rev)
	}
}

func (c *Cache) putLocked(b cluster.Bucket, st cluster.BucketState, rev int64) {
	if cur, ok := c.m[b]; !ok || rev > cur.Rev {
		c.m[b] = Entry{State: st, Rev: rev}
	}
}

// Put records a state written at rev (0: not known yet), ahead of the watch, unless the
// cache holds a later revision.
func (c *Cache) Put(b cluster.Bucket, st cluster.BucketState, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(b, st, rev)
}

// PutNewer records a state learnt from a notification, ahead of the watch, unless the watch
// already brought a newer one. The entry keeps its revision.
func (c *Cache) PutNewer(b cluster.Bucket, st cluster.BucketState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.m[b]; !ok || st.Newer(cur.State) {
		c.m[b] = Entry{State: st, Rev: cur.Rev}
	}
}

// Forget drops the states of a table (partitionID NoPartition: all its partitions) or of one
// partition.
func (c *Cache) Forget(tableID, partitionID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := range c.m {
		if b.TableID == tableID && (partitionID == cluster.NoPartition || b.PartitionID == partitionID) {
			delete(c.m, b)
		}
	}
}

// Get returns a bucket's entry.
func (c *Cache) Get(b cluster.Bucket) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[b]
	return e, ok
}

// State returns a bucket's state.
func (c *Cache) State(b cluster.Bucket) (cluster.BucketState, bool) {
	e, ok := c.Get(b)
	return e.State, ok
}

// Table returns the states of n buckets of a table (partitionID NoPartition) or partition, by
// bucket id; ok false for a bucket with no stored state.
func (c *Cache) Table(tableID, partitionID int64, n int32) ([]cluster.BucketState, []bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]cluster.BucketState, n)
	ok := make([]bool, n)
	for i := int32(0); i < n; i++ {
		if e, found := c.m[cluster.Bucket{TableID: tableID, PartitionID: partitionID, Bucket: i}]; found {
			out[i], ok[i] = e.State, true
		}
	}
	return out, ok
}

// Entries returns a copy of the entries that keep says to (nil: all).
func (c *Cache) Entries(keep func(cluster.BucketState) bool) map[cluster.Bucket]Entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[cluster.Bucket]Entry, len(c.m))
	for b, e := range c.m {
		if keep == nil || keep(e.State) {
			out[b] = e
		}
	}
	return out
}

// Snapshot returns a copy of every state.
func (c *Cache) Snapshot() map[cluster.Bucket]cluster.BucketState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[cluster.Bucket]cluster.BucketState, len(c.m))
	for b, e := range c.m {
		out[b] = e.State
	}
	return out
}

// Of returns the states of the buckets bs that have one.
func (c *Cache) Of(bs []cluster.Bucket) map[cluster.Bucket]cluster.BucketState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[cluster.Bucket]cluster.BucketState, len(bs))
	for _, b := range bs {
		if e, ok := c.m[b]; ok {
			out[b] = e.State
		}
	}
	return out
}

// AnyReplica reports whether some bucket lists server id among its replicas.
func (c *Cache) AnyReplica(id int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.m {
		if e.State.IsReplica(id) {
			return true
		}
	}
	return false
}
