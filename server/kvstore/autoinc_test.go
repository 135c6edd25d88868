package kvstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

// memSequences is a SequenceSource over in-memory counters, as the metadata store's: per
// table and column, only growing, shared by every tablet given it.
type memSequences struct {
	mu     sync.Mutex
	next   map[string]int64
	ranges []string // every range handed out, "table/col:[from,to]"
	fail   error    // returned by Allocate while set
}

func newMemSequences() *memSequences { return &memSequences{next: map[string]int64{}} }

func (m *memSequences) Allocate(_ context.Context, table int64, col int32, n int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return 0, m.fail
	}
	k := fmt.Sprintf("%d/%d", table, col)
	prev := m.next[k]
	m.next[k] = prev + n
	m.ranges = append(m.ranges, fmt.Sprintf("%s:[%d,%d]", k, prev+1, prev+n))
	return prev, nil
}

// autoIncTable is usersTable with age (BIGINT) as the auto-increment column and ranges of
// cache ids.
func autoIncTable(cache int64) Table {
	tbl := usersTable(func(c *metadata.TableConfig) { c.AutoIncrementCache = cache })
	tbl.Schema.AutoIncrement = []string{"age"}
	tbl.Schema.AssignFieldIDs()
	return tbl
}

func newAutoIncHarness(t *testing.T, tbl Table, seqs SequenceSource) *harness {
	h := &harness{t: t, dir: t.TempDir(), table: tbl, seqs: seqs}
	h.open()
	t.Cleanup(h.close)
	return h
}

// The writes of a client of an auto-increment table: every column but the id.
var idAndName = []int32{0, 1}

// Ids are assigned on insert, in order from the tablet's range, a new range fetched when one
// is used up; updates, partial or with other columns, keep the stored id; lookups and the
// changelog show it. Whatever the client put in the column is ignored.
func TestAutoIncrementAssignedOnInsertKeptOnUpdate(t *testing.T) {
	seqs := newMemSequences()
	h := newAutoIncHarness(t, autoIncTable(3), seqs)
	h.put(idAndName, up(10, "a", 999), up(11, "b", nil))
	h.put(idAndName, up(12, "c", nil), up(13, "d", nil)) // 13 takes the first id of the second range
	h.put(idAndName, up(10, "a2", 5))                    // an update keeps id 1
	h.put([]int32{0}, up(11, nil, nil))                  // key columns only: a no-op for an existing key
	eqStrings(t, "changelog", h.changelog(), []string{
		"+I(10,a,1)", "+I(11,b,2)", "+I(12,c,3)", "+I(13,d,4)", "-U(10,a,1)", "+U(10,a2,1)", "∅"})
	for id, want := range map[int64]string{10: "(10,a2,1)", 11: "(11,b,2)", 12: "(12,c,3)", 13: "(13,d,4)"} {
		if got := h.get(id); got != want {
			t.Fatalf("lookup %d = %q, want %q", id, got, want)
		}
	}
	eqStrings(t, "ranges", seqs.ranges, []string{"7/2:[1,3]", "7/2:[4,6]"})

	// A partial delete of the written columns keeps the row: its id is not NULL (Java
	// PartialUpdater.deleteRow); the written non-key columns become NULL.
	h.put(idAndName, del(11))
	if got := h.get(11); got != "(11,null,2)" {
		t.Fatalf("after the partial delete: %q", got)
	}
}

// Writes that would set the column are refused, as Java's KvTablet does, and store nothing:
// a whole-row write and target columns naming it.
func TestAutoIncrementColumnCannotBeWritten(t *testing.T) {
	h := newAutoIncHarness(t, autoIncTable(100), newMemSequences())
	_, err := h.tryPut(nil, up(1, "a", 5))
	wantCode(t, err, ferr.InvalidTargetColumn)
	_, err = h.tryPut([]int32{0, 1, 2}, up(1, "a", 5))
	wantCode(t, err, ferr.InvalidTargetColumn)
	if got := h.get(1); got != "" {
		t.Fatalf("refused write stored %q", got)
	}
	if n := h.log.LogEndOffset(); n != 0 {
		t.Fatalf("refused writes appended %d changelog offsets", n)
	}
}

// After a restart the stored ids come back with the rows (from Pebble and the changelog
// replayed after the applied offset), and new inserts take ids of a new range: the rest of
// the old one is never handed out again.
func TestAutoIncrementIdsSurviveRestartAndAreNotReused(t *testing.T) {
	seqs := newMemSequences()
	h := newAutoIncHarness(t, autoIncTable(10), seqs)
	h.put(idAndName, up(1, "a", nil), up(2, "b", nil))
	h.reopen()
	h.put(idAndName, up(3, "c", nil), up(1, "a2", nil))
	for id, want := range map[int64]string{1: "(1,a2,1)", 2: "(2,b,2)", 3: "(3,c,11)"} {
		if got := h.get(id); got != want {
			t.Fatalf("lookup %d = %q, want %q", id, got, want)
		}
	}
	eqStrings(t, "ranges", seqs.ranges, []string{"7/2:[1,10]", "7/2:[11,20]"})
}

// Two buckets of one table take disjoint ranges of the one counter of the table.
func TestAutoIncrementBucketsShareTheTableCounter(t *testing.T) {
	seqs := newMemSequences()
	b0 := newAutoIncHarness(t, autoIncTable(2), seqs)
	b1 := newAutoIncHarness(t, autoIncTable(2), seqs)
	b0.put(idAndName, up(1, "a", nil))
	b1.put(idAndName, up(2, "b", nil), up(3, "c", nil), up(4, "d", nil))
	b0.put(idAndName, up(5, "e", nil), up(6, "f", nil))
	got := []string{b0.get(1), b1.get(2), b1.get(3), b1.get(4), b0.get(5), b0.get(6)}
	eqStrings(t, "rows", got, []string{"(1,a,1)", "(2,b,3)", "(3,c,4)", "(4,d,5)", "(5,e,2)", "(6,f,7)"})
}

// LOOKUP with insert_if_not_exists inserts key-only rows: they get ids too.
func TestAutoIncrementOnInsertIfNotExists(t *testing.T) {
	h := newAutoIncHarness(t, autoIncTable(100), newMemSequences())
	h.put(idAndName, up(1, "a", nil))
	c := h.tab.tbl
	key := func(id int64) []byte {
		k, err := row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: id}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	p, err := h.tab.InsertMissingStaged([][]byte{key(1), key(2), key(3)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := []string{h.get(1), h.get(2), h.get(3)}
	eqStrings(t, "rows", got, []string{"(1,a,1)", "(2,null,2)", "(3,null,3)"})
}

// A failed range fetch fails the batch whole (Java: FlussRuntimeException, so
// UNKNOWN_SERVER_ERROR) and stores nothing; the next batch succeeds.
func TestAutoIncrementRangeFetchFailure(t *testing.T) {
	seqs := newMemSequences()
	seqs.fail = errors.New("etcd unavailable")
	h := newAutoIncHarness(t, autoIncTable(100), seqs)
	_, err := h.tryPut(idAndName, up(1, "a", nil))
	wantCode(t, err, ferr.UnknownServerError)
	if got := h.get(1); got != "" || h.log.LogEndOffset() != 0 {
		t.Fatalf("failed batch left %q, log end %d", got, h.log.LogEndOffset())
	}
	seqs.fail = nil
	h.put(idAndName, up(1, "a", nil))
	if got := h.get(1); got != "(1,a,1)" {
		t.Fatalf("after recovery of the source: %q", got)
	}
}

// maxSequences hands out ranges starting just below a limit.
type maxSequences struct{ prev int64 }

func (m *maxSequences) Allocate(_ context.Context, _ int64, _ int32, n int64) (int64, error) {
	p := m.prev
	m.prev += n
	return p, nil
}

// An INT column holds ids up to 2^31-1; the next insert fails (Java
// SequenceOverflowException, which has no code: UNKNOWN_SERVER_ERROR) and stores nothing.
func TestAutoIncrementIntOverflow(t *testing.T) {
	tbl := autoIncTable(10)
	tbl.Schema.Columns[2].Type.Root = metadata.Int
	h := newAutoIncHarness(t, tbl, &maxSequences{prev: math.MaxInt32 - 1})
	h.put(idAndName, up(1, "a", nil))
	if got := h.get(1); got != fmt.Sprintf("(1,a,%d)", math.MaxInt32) {
		t.Fatalf("last id: %q", got)
	}
	_, err := h.tryPut(idAndName, up(2, "b", nil), up(3, "c", nil))
	wantCode(t, err, ferr.UnknownServerError)
	if got := h.get(2); got != "" {
		t.Fatalf("overflowing batch stored %q", got)
	}
}

// A follower's state holds the leader's ids (they are in the changelog); promoted, it takes
// a range of its own, so the ids the old leader had left are not handed out twice.
func TestAutoIncrementFollowerAndPromotion(t *testing.T) {
	seqs := newMemSequences()
	l, f := newReplicaWith(t, autoIncTable(5), seqs), newReplicaWith(t, autoIncTable(5), seqs)
	if err := l.log.Replica().AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.tab.BecomeLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.tab.BecomeFollower()
	end, p, err := l.tab.PutStaged(l.kvBatch(1, 0, up(1, "a", nil), up(2, "b", nil)), WriteOptions{TargetColumns: idAndName}, 1)
	if err != nil {
		t.Fatal(err)
	}
	copyLog(t, l.log, f.log)
	commit(t, l.log, f.log)
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.tab.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.tab.AppliedOffset() != end {
		t.Fatalf("follower applied %d, want %d", f.tab.AppliedOffset(), end)
	}
	eqStrings(t, "follower", []string{f.get(1), f.get(2)}, []string{"(1,a,1)", "(2,b,2)"})

	l.tab.BecomeFollower()
	if err := f.log.Replica().AssignEpoch(2, f.log.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := f.tab.BecomeLeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, p, err = f.tab.PutStaged(f.kvBatch(2, 0, up(3, "c", nil), up(1, "a2", nil)), WriteOptions{TargetColumns: idAndName}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.log.Replica().SetHighWatermark(f.log.Replica().DurableLogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	eqStrings(t, "new leader", []string{f.get(1), f.get(3)}, []string{"(1,a2,1)", "(3,c,6)"})
}
