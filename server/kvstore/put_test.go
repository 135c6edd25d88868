package kvstore

import (
	"context"

	"errors"
	"os"
	"testing"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/internal/row"
)

func TestChangelogImages(t *testing.T) {
	type step struct {
		targets []int32
		recs    []rec
		end     int64 // log end offset after the step
	}
	cases := []struct {
		name  string
		mod   func(*metadata.TableConfig)
		steps []step
		want  []string
		state map[int64]string
	}{
		{
			name: "FULL: insert, update, delete (python test_subscribe_kv_table_changelog)",
			steps: []step{
				{recs: []rec{up(1, "alice", 30)}, end: 1},
				{recs: []rec{up(2, "bob", 40)}, end: 2},
				{recs: []rec{up(1, "alice2", 31)}, end: 4},
				{recs: []rec{del(2)}, end: 5},
			},
			want:  []string{"+I(1,alice,30)", "+I(2,bob,40)", "-U(1,alice,30)", "+U(1,alice2,31)", "-D(2,bob,40)"},
			state: map[int64]string{1: "(1,alice2,31)", 2: ""},
		},
		{
			name: "FULL: identical re-upsert still emits -U/+U; delete of a missing key takes an offset",
			steps: []step{
				{recs: []rec{up(1, "a", 1)}, end: 1},
				{recs: []rec{up(1, "a", 1)}, end: 3},
				{recs: []rec{del(9)}, end: 4},
			},
			want:  []string{"+I(1,a,1)", "-U(1,a,1)", "+U(1,a,1)", "∅"},
			state: map[int64]string{1: "(1,a,1)", 9: ""},
		},
		{
			name: "FULL: records of one batch see each other",
			steps: []step{
				{recs: []rec{up(1, "a", 1), up(1, "b", 2), del(1), up(1, "c", 3)}, end: 5},
			},
			want:  []string{"+I(1,a,1)", "-U(1,a,1)", "+U(1,b,2)", "-D(1,b,2)", "+I(1,c,3)"},
			state: map[int64]string{1: "(1,c,3)"},
		},
		{
			name: "WAL: upserts are +U without reading the old row, deletes -D",
			mod:  func(c *metadata.TableConfig) { c.ChangelogImage = metadata.ChangelogWAL },
			steps: []step{
				{recs: []rec{up(1, "a", 1)}, end: 1},
				{recs: []rec{up(1, "b", 2)}, end: 2},
				{recs: []rec{del(1), del(1)}, end: 3},
			},
			want:  []string{"+U(1,a,1)", "+U(1,b,2)", "-D(1,b,2)"},
			state: map[int64]string{1: ""},
		},
		{
			name: "WAL with partial update: +I on insert, +U on update",
			mod:  func(c *metadata.TableConfig) { c.ChangelogImage = metadata.ChangelogWAL },
			steps: []step{
				{targets: []int32{0, 2}, recs: []rec{up(1, nil, 5)}, end: 1},
				{targets: []int32{0, 1}, recs: []rec{up(1, "x", nil)}, end: 2},
			},
			want:  []string{"+I(1,null,5)", "+U(1,x,5)"},
			state: map[int64]string{1: "(1,x,5)"},
		},
		{
			name: "delete behavior IGNORE",
			mod:  func(c *metadata.TableConfig) { c.DeleteBehavior = metadata.DeleteIgnore },
			steps: []step{
				{recs: []rec{up(1, "a", 1)}, end: 1},
				{recs: []rec{del(1)}, end: 2},
			},
			want:  []string{"+I(1,a,1)", "∅"},
			state: map[int64]string{1: "(1,a,1)"},
		},
		{
			name: "COMPACTED log format",
			mod:  func(c *metadata.TableConfig) { c.LogFormat = metadata.LogFormatCompacted },
			steps: []step{
				{recs: []rec{up(1, "a", 1)}, end: 1},
				{recs: []rec{up(1, "b", 2), del(1)}, end: 4},
			},
			want:  []string{"+I(1,a,1)", "-U(1,a,1)", "+U(1,b,2)", "-D(1,b,2)"},
			state: map[int64]string{1: ""},
		},
		{
			name: "INDEXED kv and log formats",
			mod: func(c *metadata.TableConfig) {
				c.LogFormat, c.KvFormat = metadata.LogFormatIndexed, metadata.KvFormatIndexed
			},
			steps: []step{
				{recs: []rec{up(1, "a", 1)}, end: 1},
				{recs: []rec{up(1, "b", nil)}, end: 3},
			},
			want:  []string{"+I(1,a,1)", "-U(1,a,1)", "+U(1,b,null)"},
			state: map[int64]string{1: "(1,b,null)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, usersTable(tc.mod))
			for i, s := range tc.steps {
				if end := h.put(s.targets, s.recs...); end != s.end {
					t.Fatalf("step %d: log end %d, want %d", i, end, s.end)
				}
			}
			eqStrings(t, "changelog", h.changelog(), tc.want)
			check := func(when string) {
				for id, want := range tc.state {
					if got := h.get(id); got != want {
						t.Fatalf("%s: lookup %d = %q, want %q", when, id, got, want)
					}
				}
			}
			check("live")
			h.reopen()
			check("after reopen")
			// Rebuild the whole state from the changelog alone.
			if err := h.tab.Drop(); err != nil {
				t.Fatal(err)
			}
			h.reopen()
			check("after replay from offset 0")
		})
	}
}

func TestPartialUpdate(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "alice", 30))
	h.put([]int32{0, 2}, up(1, nil, 31))    // age only
	h.put([]int32{0, 1}, up(2, "bob", nil)) // insert via partial update
	h.put([]int32{0}, up(1, nil, nil))      // only the key: no-op
	h.put([]int32{0, 2}, del(1))            // name is not null: null out age
	h.put([]int32{0, 1}, del(2))            // age already null: delete the row
	h.put([]int32{2, 1, 0}, up(3, "c", 3))  // every column, any order: full upsert
	eqStrings(t, "changelog", h.changelog(), []string{
		"+I(1,alice,30)",
		"-U(1,alice,30)", "+U(1,alice,31)",
		"+I(2,bob,null)",
		"∅",
		"-U(1,alice,31)", "+U(1,alice,null)",
		"-D(2,bob,null)",
		"+I(3,c,3)",
	})
	if got := h.get(1); got != "(1,alice,null)" {
		t.Fatalf("row 1 = %s", got)
	}
}

func TestPartialUpdateValidation(t *testing.T) {
	notNull := usersTable(nil)
	notNull.Schema.Columns[2].Type.NotNull = true
	cases := []struct {
		name    string
		table   Table
		targets []int32
		code    ferr.Code
	}{
		{"targets without the primary key", usersTable(nil), []int32{1}, ferr.InvalidTargetColumn},
		{"a non-key column is NOT NULL", notNull, []int32{0, 1}, ferr.InvalidTargetColumn},
		{"target out of range", usersTable(nil), []int32{0, 7}, ferr.InvalidTargetColumn},
		{"first_row refuses partial updates", usersTable(func(c *metadata.TableConfig) {
			c.MergeEngine, c.DeleteBehavior = metadata.MergeEngineFirstRow, metadata.DeleteIgnore
		}), []int32{0, 1}, ferr.UnknownServerError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.table)
			_, err := h.tryPut(tc.targets, up(1, "a", 1))
			if ferr.CodeOf(err) != tc.code {
				t.Fatalf("error %v (code %v), want code %v", err, ferr.CodeOf(err), tc.code)
			}
			if h.log.LogEndOffset() != 0 {
				t.Fatalf("a rejected batch reached the log")
			}
		})
	}
}

func TestMergeEngines(t *testing.T) {
	t.Run("first_row keeps the first row and ignores deletes", func(t *testing.T) {
		h := newHarness(t, usersTable(func(c *metadata.TableConfig) {
			c.MergeEngine, c.DeleteBehavior = metadata.MergeEngineFirstRow, metadata.DeleteIgnore
		}))
		h.put(nil, up(1, "a", 1))
		h.put(nil, up(1, "b", 2), up(2, "x", 9))
		h.put(nil, del(1))
		eqStrings(t, "changelog", h.changelog(), []string{"+I(1,a,1)", "+I(2,x,9)", "∅"})
		if got := h.get(1); got != "(1,a,1)" {
			t.Fatalf("row 1 = %s", got)
		}
	})
	t.Run("versioned replaces on version >= stored, NULL is the lowest", func(t *testing.T) {
		h := newHarness(t, usersTable(func(c *metadata.TableConfig) {
			c.MergeEngine, c.VersionColumn, c.DeleteBehavior = metadata.MergeEngineVersioned, "age", metadata.DeleteIgnore
		}))
		h.put(nil, up(1, "v5", 5))
		h.put(nil, up(1, "v4", 4))      // older: no-op
		h.put(nil, up(1, "v5b", 5))     // tie: new wins
		h.put(nil, up(1, "vnull", nil)) // NULL < 5: no-op
		h.put(nil, up(2, "n", nil), up(2, "n2", nil))
		eqStrings(t, "changelog", h.changelog(), []string{
			"+I(1,v5,5)", "∅", "-U(1,v5,5)", "+U(1,v5b,5)", "∅",
			"+I(2,n,null)", "-U(2,n,null)", "+U(2,n2,null)",
		})
	})
	t.Run("delete behavior DISABLE fails the whole batch", func(t *testing.T) {
		h := newHarness(t, usersTable(func(c *metadata.TableConfig) { c.DeleteBehavior = metadata.DeleteDisable }))
		h.put(nil, up(1, "a", 1))
		_, err := h.tryPut(nil, up(2, "b", 2), del(1))
		if ferr.CodeOf(err) != ferr.DeletionDisabledException {
			t.Fatalf("err = %v", err)
		}
		if h.get(2) != "" || h.log.LogEndOffset() != 1 {
			t.Fatalf("part of a rejected batch was applied")
		}
	})
}

// aggSchema: (id INT pk, total BIGINT sum, best DOUBLE max, tags STRING listagg(;),
// flag BOOLEAN bool_or, last STRING last_value, keep STRING (default last_value_ignore_nulls)).
func aggTable() Table {
	col := func(name string, root metadata.TypeRoot, fn string, params map[string]string) metadata.Column {
		c := metadata.Column{Name: name, Type: metadata.DataType{Root: root}}
		if fn != "" {
			c.AggFunction = &metadata.AggFunction{Type: fn, Parameters: params}
		}
		return c
	}
	s := metadata.Schema{
		Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
			col("total", metadata.BigInt, metadata.AggSum, nil),
			col("best", metadata.Double, metadata.AggMax, nil),
			col("tags", metadata.String, metadata.AggListAgg, map[string]string{metadata.AggParamDelimiter: ";"}),
			col("flag", metadata.Boolean, metadata.AggBoolOr, nil),
			col("last", metadata.String, metadata.AggLastValue, nil),
			col("keep", metadata.String, "", nil),
		},
		PrimaryKey: []string{"id"},
	}
	return Table{ID: 7, SchemaID: 1, Schema: s, Config: metadata.TableConfig{
		LogFormat: metadata.LogFormatArrow, MergeEngine: metadata.MergeEngineAggregation, DeleteBehavior: metadata.DeleteIgnore}}
}

func aggRow(id int64, vals ...any) rec {
	r := []row.Datum{{I: id}}
	for _, v := range vals {
		r = append(r, opt(v))
	}
	return rec{key: []row.Datum{{I: id}}, row: r}
}

func TestAggregation(t *testing.T) {
	h := newHarness(t, aggTable())
	h.put(nil, aggRow(1, 10, 1.5, "a", false, "x", "k"))
	h.put(nil, aggRow(1, 5, 0.5, "b", true, nil, nil))
	h.put(nil, aggRow(1, nil, 2.5, nil, false, "y", "k2"))
	h.put([]int32{0, 1}, aggRow(1, 100, 99.0, "zz", true, "p", "p")) // only total aggregates
	h.put(nil, del(1))                                               // IGNORE
	eqStrings(t, "changelog", h.changelog(), []string{
		"+I(1,10,1.5,a,false,x,k)",
		"-U(1,10,1.5,a,false,x,k)", "+U(1,15,1.5,a;b,true,null,k)",
		"-U(1,15,1.5,a;b,true,null,k)", "+U(1,15,2.5,a;b,true,y,k2)",
		"-U(1,15,2.5,a;b,true,y,k2)", "+U(1,115,2.5,a;b,true,y,k2)",
		"∅",
	})
	h.reopen()
	if got := h.get(1); got != "(1,115,2.5,a;b,true,y,k2)" {
		t.Fatalf("row = %s", got)
	}
}

func TestIdempotentWriter(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	b0 := h.kvBatch(5, 0, up(1, "a", 1))
	if end, err := h.tab.putWait(b0, WriteOptions{}, 1); err != nil || end != 1 {
		t.Fatalf("first put: %d %v", end, err)
	}
	b1 := h.kvBatch(5, 1, up(1, "b", 2))
	if end, err := h.tab.putWait(b1, WriteOptions{}, 1); err != nil || end != 3 {
		t.Fatalf("second put: %d %v", end, err)
	}
	// A retry of sequence 0 is a duplicate: the original offsets, nothing applied.
	if end, err := h.tab.putWait(h.kvBatch(5, 0, up(1, "a", 1)), WriteOptions{}, 1); err != nil || end != 1 {
		t.Fatalf("duplicate: %d %v", end, err)
	}
	// A gap in the sequence is refused and applies nothing.
	_, err := h.tab.putWait(h.kvBatch(5, 3, up(1, "c", 3)), WriteOptions{}, 1)
	if ferr.CodeOf(err) != ferr.OutOfOrderSequenceException {
		t.Fatalf("gap: %v", err)
	}
	if got := h.get(1); got != "(1,b,2)" || h.log.LogEndOffset() != 3 {
		t.Fatalf("state %s, log end %d", got, h.log.LogEndOffset())
	}
	if _, err := h.tab.putWait(h.kvBatch(5, 2, up(1, "c", 3)), WriteOptions{}, 1); err != nil {
		t.Fatal(err)
	}
	if got := h.get(1); got != "(1,c,3)" {
		t.Fatalf("state %s", got)
	}
}

func TestSchemaIDValidation(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.table.SchemaID = 2 // the client claims a schema the server does not have
	_, err := h.tab.putWait(h.kvBatch(-1, -1, up(1, "a", 1)), WriteOptions{}, 1)
	if ferr.CodeOf(err) != ferr.SchemaNotExist {
		t.Fatalf("err = %v", err)
	}
}

func TestCrashBetweenAppendAndApply(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1), up(2, "b", 2))
	h.tab.testHookAfterAppend = func() error { return errors.New("simulated crash") }
	if _, err := h.tryPut(nil, up(1, "a2", 10), del(2), up(3, "c", 3)); err == nil {
		t.Fatal("hook did not fire")
	}
	// The changelog holds the batch, the state does not; the tablet refuses further writes.
	if h.get(1) != "(1,a,1)" || h.log.LogEndOffset() != 6 {
		t.Fatalf("state before recovery: %s, log end %d", h.get(1), h.log.LogEndOffset())
	}
	if _, err := h.tryPut(nil, up(4, "d", 4)); err == nil {
		t.Fatal("failed tablet accepted a write")
	}
	h.reopen()
	for id, want := range map[int64]string{1: "(1,a2,10)", 2: "", 3: "(3,c,3)"} {
		if got := h.get(id); got != want {
			t.Fatalf("after recovery: %d = %q, want %q", id, got, want)
		}
	}
	if h.tab.AppliedOffset() != 6 {
		t.Fatalf("applied %d", h.tab.AppliedOffset())
	}
	h.seq = 2 // the crashed batch used sequence 1 and is in the log
	h.put(nil, up(4, "d", 4))
	if h.get(4) != "(4,d,4)" {
		t.Fatal("write after recovery lost")
	}
}

func TestRecoveryWhenPebbleLostEverything(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	for i := int64(0); i < 50; i++ {
		h.put(nil, up(i%7, "n", i))
	}
	h.put(nil, del(3))
	h.close()
	// Pebble without its WAL may lose every unflushed write in a crash; the extreme case is
	// losing the whole store.
	if err := os.RemoveAll(h.dir + "/kv"); err != nil {
		t.Fatal(err)
	}
	h.open()
	for i := int64(0); i < 7; i++ {
		want := ""
		if i != 3 {
			last := i + 7*((49-i)/7)
			want = render(h.tab.tbl.types, []row.Datum{{I: i}, {B: []byte("n")}, {I: last}})
		}
		if got := h.get(i); got != want {
			t.Fatalf("%d = %q, want %q", i, got, want)
		}
	}
}

// A table with table.datalake.format paimon has its keys encoded by clients as Paimon
// BinaryRows; the changelog replay (recovery, and followers' CatchUp) rebuilds the same bytes,
// so the rows it restores are found by lookups. Before, it rebuilt compacted keys: every
// lookup missed after a crash.
func TestRecoveryRebuildsPaimonKeys(t *testing.T) {
	h := newHarness(t, usersTable(func(c *metadata.TableConfig) { c.DataLakeFormat = row.LakePaimon }))
	long := "a name longer than seven bytes"
	h.put(nil, up(1, "a", 1), up(2, long, 2), up(3, "c", 3))
	h.put(nil, up(1, "a2", 10), del(3))
	if _, err := h.tryPut(nil, rec{key: []row.Datum{{I: 9}}, row: []row.Datum{{I: 8}, {B: []byte("x")}, {I: 0}}}); ferr.CodeOf(err) != ferr.CorruptRecordException {
		t.Fatalf("key of another row: %v, want CORRUPT_RECORD_EXCEPTION", err)
	}
	h.close()
	if err := os.RemoveAll(h.dir + "/kv"); err != nil {
		t.Fatal(err)
	}
	h.open()
	for id, want := range map[int64]string{1: "(1,a2,10)", 2: "(2," + long + ",2)", 3: ""} {
		if got := h.get(id); got != want {
			t.Fatalf("%d = %q, want %q", id, got, want)
		}
	}
}

// agg_mode OVERWRITE bypasses the merge engine: the row (or its targeted columns) replaces the
// stored one, and deletes are allowed even where the table ignores them (Java overwrite merger).
func TestOverwriteModeBypassesMergeEngine(t *testing.T) {
	h := newHarness(t, aggTable())
	h.put(nil, aggRow(1, 10, 1.5, "a", false, "x", "k"))
	h.put(nil, aggRow(1, 5, 0.5, "b", true, nil, nil)) // aggregated: total 15, tags a;b
	overwrite := func(targets []int32, r rec) {
		t.Helper()
		_, wait, err := h.tab.PutStaged(h.kvBatch(-1, -1, r), WriteOptions{TargetColumns: targets, Mode: MergeOverwrite}, 1)
		if err == nil {
			err = wait.Wait(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	overwrite(nil, aggRow(1, 10, 1.5, "a", false, "x", "k")) // undo the second write
	if got := h.get(1); got != "(1,10,1.5,a,false,x,k)" {
		t.Fatalf("after overwrite: %s", got)
	}
	overwrite([]int32{0, 1}, aggRow(1, 7, nil, nil, nil, nil, nil)) // partial: only total
	if got := h.get(1); got != "(1,7,1.5,a,false,x,k)" {
		t.Fatalf("after partial overwrite: %s", got)
	}
	overwrite(nil, del(1)) // the table ignores deletes; overwrite mode does not
	if got := h.get(1); got != "" {
		t.Fatalf("after overwrite delete: %s", got)
	}
	// An unknown mode value means the default merge engine, as in Java.
	_, wait, err := h.tab.PutStaged(h.kvBatch(-1, -1, aggRow(2, 1, nil, nil, nil, nil, nil)), WriteOptions{Mode: 7}, 1)
	if err == nil {
		err = wait.Wait(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	h.put(nil, aggRow(2, 2, nil, nil, nil, nil, nil))
	if got := h.get(2); got != "(2,3,null,null,null,null,null)" {
		t.Fatalf("default mode: %s", got)
	}
}

// A KV record whose key is not its row's primary key is refused and nothing of the batch is
// written (stored under the wrong key it would answer lookups of another key, and recovery,
// which derives keys from rows, would move it).
func TestPutRefusesKeyNotMatchingRow(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	bad := up(1, "a", 1)
	bad.key = []row.Datum{{I: 2}} // the row says id 1
	_, err := h.tryPut(nil, up(3, "c", 3), bad)
	if ferr.CodeOf(err) != ferr.CorruptRecordException {
		t.Fatalf("err = %v", err)
	}
	if h.get(1) != "" || h.get(2) != "" || h.get(3) != "" || h.log.LogEndOffset() != 0 {
		t.Fatalf("a refused batch left state: %q %q %q, log end %d", h.get(1), h.get(2), h.get(3), h.log.LogEndOffset())
	}
}

// LOOKUP with insert_if_not_exists: missing keys get a row of just their key columns (one +I
// each, a key repeated in the request inserted once); existing keys are untouched.
func TestInsertMissing(t *testing.T) {
	h := newHarness(t, usersTable(nil))
	h.put(nil, up(1, "a", 1))
	c := h.tab.tbl
	key := func(id int64) []byte {
		k, err := row.EncodeKey(nil, c.keyTypes, []row.Datum{{I: id}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	wait, err := h.tab.InsertMissingStaged([][]byte{key(1), key(2), key(3), key(2)}, 1)
	if err != nil || !wait.staged() {
		t.Fatalf("staged %v, err %v", wait.staged(), err)
	}
	if err := wait.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]string{1: "(1,a,1)", 2: "(2,null,null)", 3: "(3,null,null)"} {
		if got := h.get(id); got != want {
			t.Fatalf("%d = %q, want %q", id, got, want)
		}
	}
	eqStrings(t, "changelog", h.changelog(), []string{"+I(1,a,1)", "+I(2,null,null)", "+I(3,null,null)"})
	if p, err := h.tab.InsertMissingStaged([][]byte{key(1), key(3)}, 1); err != nil || p.staged() {
		t.Fatalf("all keys exist: staged %v, err %v", p.staged(), err)
	}
}

// DECIMAL(5,2) sum past its precision, as Java does it (arith, sumDecimalFits): with an ARROW
// changelog the write fails whole with UNKNOWN_SERVER_ERROR (Java's Arrow writer refuses the
// wider value); with a COMPACTED changelog the wider sum 1000.00 is stored and logged.
func TestDecimalSumPastItsPrecision(t *testing.T) {
	for _, format := range []metadata.LogFormat{metadata.LogFormatArrow, metadata.LogFormatCompacted} {
		s := metadata.Schema{Columns: []metadata.Column{
			{Name: "id", Type: metadata.DataType{Root: metadata.Int, NotNull: true}},
			{Name: "amount", Type: metadata.DataType{Root: metadata.Decimal, Precision: 5, Scale: 2}, AggFunction: &metadata.AggFunction{Type: metadata.AggSum}},
		}, PrimaryKey: []string{"id"}}
		h := newHarness(t, Table{ID: 7, SchemaID: 1, Schema: s, Config: metadata.TableConfig{
			LogFormat: format, MergeEngine: metadata.MergeEngineAggregation, DeleteBehavior: metadata.DeleteIgnore}})
		h.put(nil, aggRow(1, int64(99999))) // 999.99
		_, err := h.tryPut(nil, aggRow(1, int64(1)))
		if format == metadata.LogFormatArrow {
			wantCode(t, err, ferr.UnknownServerError)
			if got := h.get(1); got != "(1,99999)" {
				t.Fatalf("%v: after the refused sum: %q", format, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", format, err)
		}
		if got := h.get(1); got != "(1,100000)" {
			t.Fatalf("%v: %q, want the wider sum", format, got)
		}
		eqStrings(t, "changelog", h.changelog(), []string{"+I(1,99999)", "-U(1,99999)", "+U(1,100000)"})
	}
}
