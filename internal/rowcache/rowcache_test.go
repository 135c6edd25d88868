package rowcache

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

func newCache(t *testing.T, budget int64) *Cache {
	t.Helper()
	c, err := New(budget)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func get(c *Cache, k string) (string, bool) {
	v, ok := c.Get(nil, []byte(k))
	return string(v), ok
}

func TestSetGetDel(t *testing.T) {
	c := newCache(t, 1<<20)
	if _, ok := get(c, "a"); ok {
		t.Fatal("empty cache found a")
	}
	c.Set([]byte("a"), []byte("1"))
	c.Set([]byte("b"), nil) // an empty value is a value
	if v, ok := get(c, "a"); !ok || v != "1" {
		t.Fatalf("a = %q, %v", v, ok)
	}
	if v, ok := get(c, "b"); !ok || v != "" {
		t.Fatalf("b = %q, %v", v, ok)
	}
	c.Set([]byte("a"), []byte("a much longer value than before, so it moves"))
	if v, _ := get(c, "a"); v != "a much longer value than before, so it moves" {
		t.Fatalf("a after growing = %q", v)
	}
	c.Del([]byte("a"))
	if _, ok := get(c, "a"); ok {
		t.Fatal("deleted a found")
	}
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("entries = %d, want 1", st.Entries)
	}
}

// A value too large for an entry removes the older one: a reader must never see it.
func TestTooLargeRemovesOlder(t *testing.T) {
	c := newCache(t, 1<<20)
	c.Set([]byte("k"), []byte("old"))
	c.Set([]byte("k"), make([]byte, MaxEntry))
	if v, ok := get(c, "k"); ok {
		t.Fatalf("k = %d bytes after a too large Set, want a miss", len(v))
	}
}

// Rewriting the same keys with values of the same size reuses their entries: the arena's
// written part stays the size of one copy of the rows, whatever the number of updates.
func TestUpdatesInPlaceDoNotGrowTheArena(t *testing.T) {
	c := newCache(t, 64<<20)
	const n = 20000
	val := make([]byte, 100)
	for round := 0; round < 5; round++ {
		for i := 0; i < n; i++ {
			val[0] = byte(round)
			c.Set(fmt.Appendf(nil, "key-%d", i), val)
		}
		st := c.Stats()
		if st.Entries != n {
			t.Fatalf("round %d: %d entries, want %d", round, st.Entries, n)
		}
		if limit := int64(n * 128 * 11 / 10); st.ArenaBytes > limit {
			t.Fatalf("round %d: arena written %d bytes, want ≤ %d (one copy of %d rows)", round, st.ArenaBytes, limit, n)
		}
	}
	for i := 0; i < n; i++ {
		if v, ok := c.Get(nil, fmt.Appendf(nil, "key-%d", i)); !ok || v[0] != 4 {
			t.Fatalf("key-%d = %v, %v", i, v, ok)
		}
	}
}

// Writing far more than the budget evicts the oldest entries and never lets the arena or the
// index grow past their bounds.
func TestBudgetRespected(t *testing.T) {
	const budget = 4 << 20
	c := newCache(t, budget)
	val := make([]byte, 120)
	const n = 200000 // ~26 MB of entries
	for i := 0; i < n; i++ {
		c.Set(fmt.Appendf(nil, "key-%d", i), val)
	}
	st := c.Stats()
	if st.Budget > budget || st.ArenaBytes > st.Budget {
		t.Fatalf("arena %d of budget %d, configured %d", st.ArenaBytes, st.Budget, budget)
	}
	maxEntries := st.Budget / 136 // footprint of one entry
	if st.Entries > maxEntries || st.Entries < maxEntries/2 {
		t.Fatalf("%d entries live, want about %d", st.Entries, maxEntries)
	}
	if st.IndexBytes > 8*4*maxEntries {
		t.Fatalf("index %d bytes for %d entries", st.IndexBytes, st.Entries)
	}
	// First in, first out: the newest keys are there, the oldest are gone.
	if _, ok := get(c, "key-0"); ok {
		t.Error("the oldest key survived 6× the budget of newer ones")
	}
	hits := 0
	for i := n - 1000; i < n; i++ {
		if _, ok := get(c, fmt.Sprintf("key-%d", i)); ok {
			hits++
		}
	}
	if hits < 990 {
		t.Errorf("%d of the newest 1000 keys cached", hits)
	}
}

// A random mix of sets of varying sizes, deletes and gets on a small cache (many wraps of
// each ring, padding, relocations, backward-shift deletions in the index) agrees with a map:
// a get finds either nothing or exactly the last value set.
func TestAgreesWithModel(t *testing.T) {
	c := newCache(t, 256<<10) // four shards of 64 KiB
	model := map[string][]byte{}
	r := rand.New(rand.NewPCG(1, 2))
	hits := 0
	for op := 0; op < 300000; op++ {
		k := fmt.Sprintf("k%d", r.IntN(3000))
		switch x := r.IntN(10); {
		case x < 5:
			v := make([]byte, r.IntN(200))
			for i := range v {
				v[i] = byte(r.Uint32())
			}
			c.Set([]byte(k), v)
			model[k] = v
		case x < 6:
			c.Del([]byte(k))
			delete(model, k)
		default:
			got, ok := c.Get(nil, []byte(k))
			want, in := model[k]
			if ok && (!in || !bytes.Equal(got, want)) {
				t.Fatalf("op %d: Get(%s) = %x, want %x (in model: %v)", op, k, got, want, in)
			}
			if ok {
				hits++
			}
		}
	}
	if hits == 0 {
		t.Fatal("no hits at all")
	}
	// Every live slot must be findable: count the keys a Get finds against the entry count.
	found := 0
	for k := range model {
		if _, ok := c.Get(nil, []byte(k)); ok {
			found++
		}
	}
	if st := c.Stats(); int64(found) != st.Entries {
		t.Fatalf("%d keys findable, %d entries in the index", found, st.Entries)
	}
}

// Concurrent writers and readers of disjoint keys each read back their own last value (run
// with -race).
func TestConcurrent(t *testing.T) {
	c := newCache(t, 8<<20)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := map[int]int{}
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for op := 0; op < 20000; op++ {
				i := r.IntN(500)
				k := fmt.Appendf(nil, "w%d-%d", w, i)
				if r.IntN(2) == 0 {
					c.Set(k, fmt.Appendf(nil, "%d", op))
					last[i] = op
					continue
				}
				got, ok := c.Get(nil, k)
				if want, in := last[i]; ok && (!in || string(got) != fmt.Sprint(want)) {
					errs <- fmt.Errorf("w%d: %s = %s, want %d", w, k, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestClosedCacheIsEmpty(t *testing.T) {
	c, err := New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	c.Set([]byte("a"), []byte("1"))
	c.Close()
	c.Set([]byte("b"), []byte("2"))
	if _, ok := get(c, "a"); ok {
		t.Fatal("closed cache found a")
	}
	c.Close() // idempotent
}

func TestNewRejectsTinyBudget(t *testing.T) {
	if _, err := New(1000); err == nil {
		t.Fatal("a 1000-byte budget was accepted")
	}
}

func BenchmarkSetGet(b *testing.B) {
	c, err := New(256 << 20)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	keys := make([][]byte, 1<<20)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
	}
	val := make([]byte, 110)
	var dst []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&(len(keys)-1)]
		dst, _ = c.Get(dst[:0], k)
		c.Set(k, val)
	}
}

// Sweep removes exactly the entries it is told are dead; a shard left without entries gives
// its pages back and starts from empty, and the cache keeps working afterwards.
func TestSweepRemovesDeadAndReleasesEmptyShards(t *testing.T) {
	c := newCache(t, 16<<20)
	val := bytes.Repeat([]byte("v"), 100)
	for i := range 200000 { // more than fit: every shard's ring is full and its index grown
		c.Set([]byte(fmt.Sprintf("dead-%d", i)), val)
	}
	for i := range 100 {
		c.Set([]byte(fmt.Sprintf("live-%d", i)), []byte(fmt.Sprint(i)))
	}
	before := c.Stats()
	isDead := func(k []byte) bool { return bytes.HasPrefix(k, []byte("dead-")) }
	released := c.Sweep(isDead)
	after := c.Stats()
	if after.Entries != 100 {
		t.Fatalf("entries after the sweep = %d, want the 100 live ones", after.Entries)
	}
	for i := range 100 {
		if v, ok := get(c, fmt.Sprintf("live-%d", i)); !ok || v != fmt.Sprint(i) {
			t.Fatalf("live-%d = %q, %v after the sweep", i, v, ok)
		}
	}
	if _, ok := get(c, "dead-7"); ok {
		t.Fatal("a dead entry survived the sweep")
	}
	// 100 live keys keep at most 100 of the 256 shards; every other shard was released.
	if released <= 0 || after.ArenaBytes >= before.ArenaBytes || after.ArenaBytes+released != before.ArenaBytes {
		t.Fatalf("arena %d → %d bytes, released %d", before.ArenaBytes, after.ArenaBytes, released)
	}
	if after.IndexBytes >= before.IndexBytes {
		t.Fatalf("index %d → %d bytes: released shards keep their grown index", before.IndexBytes, after.IndexBytes)
	}

	// Everything dead: the whole arena goes back, and the cache holds new entries again.
	released = c.Sweep(func([]byte) bool { return true })
	if st := c.Stats(); st.Entries != 0 || st.ArenaBytes != 0 || released != after.ArenaBytes {
		t.Fatalf("after sweeping everything: %+v, released %d of %d", st, released, after.ArenaBytes)
	}
	for i := range 20000 {
		c.Set([]byte(fmt.Sprintf("new-%d", i)), []byte(fmt.Sprint(i)))
	}
	for i := range 20000 {
		if v, ok := get(c, fmt.Sprintf("new-%d", i)); !ok || v != fmt.Sprint(i) {
			t.Fatalf("new-%d = %q, %v after the release", i, v, ok)
		}
	}
}

// A sweep that finds nothing dead changes nothing, and the ring's eviction still works on a
// released shard (the model test's invariants hold across a release).
func TestSweepKeepsLiveAndEvictionAfterRelease(t *testing.T) {
	c := newCache(t, 256<<10) // few shards, so the ring wraps quickly
	for i := range 1000 {
		c.Set([]byte(fmt.Sprint(i)), bytes.Repeat([]byte{byte(i)}, 50))
	}
	st := c.Stats()
	if got := c.Sweep(func([]byte) bool { return false }); got != 0 || c.Stats() != st {
		t.Fatalf("a sweep of nothing released %d, stats %+v → %+v", got, st, c.Stats())
	}
	c.Sweep(func([]byte) bool { return true })
	last := map[string]byte{}
	for i := range 20000 { // several times round each ring
		k := fmt.Sprint(i % 3000)
		c.Set([]byte(k), bytes.Repeat([]byte{byte(i)}, 60))
		last[k] = byte(i)
	}
	for k, b := range last {
		if v, ok := c.Get(nil, []byte(k)); ok && (len(v) != 60 || v[0] != b) {
			t.Fatalf("%s = %v..., want the last value %d", k, v[:1], b)
		}
	}
	if st := c.Stats(); st.ArenaBytes > st.Budget {
		t.Fatalf("arena %d beyond the budget %d", st.ArenaBytes, st.Budget)
	}
}
