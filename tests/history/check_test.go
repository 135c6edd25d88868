package history

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// op is a shorthand for hand-made histories: times in arbitrary units.
func op(proc int, kind Kind, key, value, invoke, ret int64, out Outcome) Op {
	return Op{Proc: proc, Kind: kind, Key: key, Value: value, Invoke: invoke, Return: ret, Outcome: out}
}

func wantPass(t *testing.T, name string, p Problems) {
	t.Helper()
	if err := p.Err(); err != nil {
		t.Errorf("%s: want pass, got %v", name, err)
	}
}

func wantFail(t *testing.T, name string, p Problems, substr string) {
	t.Helper()
	if len(p) == 0 {
		t.Errorf("%s: want a problem mentioning %q, got none", name, substr)
		return
	}
	if !strings.Contains(strings.Join(p, "\n"), substr) {
		t.Errorf("%s: want a problem mentioning %q, got %v", name, substr, p)
	}
}

func TestCheckAppends(t *testing.T) {
	ops := []Op{
		op(0, Append, 1, 0, 10, 20, OK),
		op(1, Append, 2, 0, 15, 25, OK),     // concurrent with 1
		op(0, Append, 3, 0, 30, 40, OK),     // after both
		op(0, Append, 4, 0, 50, 0, Unknown), // may or may not be there
		op(1, Append, 5, 0, 50, 0, Fail),    // may or may not be there
		op(2, Append, 6, 0, 30, 35, OK),     // another bucket
	}
	good := []Record{{0, 0, 2, 0, ""}, {0, 1, 1, 0, ""}, {0, 2, 3, 0, ""}, {0, 3, 5, 0, ""}, {1, 0, 6, 0, ""}}
	wantPass(t, "concurrent appends in either order, unknowns present or not", CheckAppends(ops, good))

	wantFail(t, "lost", CheckAppends(ops, good[1:]), "id 2 is not in the log (lost)")
	wantFail(t, "duplicated", CheckAppends(ops, append(good[:len(good):len(good)], Record{1, 1, 3, 0, ""})), "id 3 is in the log twice")
	wantFail(t, "two records at one offset", CheckAppends(ops, append(good[:len(good):len(good)], Record{0, 2, 4, 0, ""})), "offset 2 holds two records")
	wantFail(t, "phantom", CheckAppends(ops, append(good[:len(good):len(good)], Record{1, 1, 99, 0, ""})), "which no client appended")
	reordered := []Record{{0, 0, 3, 0, ""}, {0, 1, 1, 0, ""}, {0, 2, 2, 0, ""}, {1, 0, 6, 0, ""}}
	wantFail(t, "reordered within a bucket", CheckAppends(ops, reordered), "reordered")
	// The same order across two buckets is no reordering: order holds within a bucket only.
	split := []Record{{0, 0, 3, 0, ""}, {1, 0, 1, 0, ""}, {1, 1, 2, 0, ""}, {1, 2, 6, 0, ""}}
	wantPass(t, "later append in another bucket at a lower offset", CheckAppends(ops, split))
	// An unknown append may commit late, after an acknowledged one invoked after it.
	late := []Record{{0, 0, 1, 0, ""}, {0, 1, 2, 0, ""}, {0, 2, 3, 0, ""}, {0, 3, 6, 0, ""}, {0, 4, 4, 0, ""}}
	late[3].Bucket, late[3].Offset = 1, 0
	wantPass(t, "unknown append committed late", CheckAppends(ops, late))
}

func TestCheckRegisters(t *testing.T) {
	pass := map[string][]Op{
		"read your write": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(0, Lookup, 1, 100, 11, 12, OK),
		},
		"absent before the first write, concurrent read sees either": {
			op(0, Lookup, 1, Absent, 0, 1, OK),
			op(0, Upsert, 1, 100, 2, 10, OK),
			op(1, Lookup, 1, Absent, 3, 4, OK),
			op(1, Lookup, 1, 100, 5, 6, OK),
		},
		"unknown write takes effect late": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(1, Upsert, 1, 200, 5, 0, Unknown),
			op(0, Lookup, 1, 100, 20, 21, OK),
			op(0, Lookup, 1, 200, 30, 31, OK),
		},
		"unknown write never takes effect": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(1, Upsert, 1, 200, 5, 0, Fail),
			op(0, Lookup, 1, 100, 20, 21, OK),
		},
		"keys are independent": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(1, Upsert, 2, 200, 0, 10, OK),
			op(0, Lookup, 2, 200, 11, 12, OK),
			op(1, Lookup, 1, 100, 11, 12, OK),
		},
	}
	for name, h := range pass {
		wantPass(t, name, CheckRegisters(h, 10*time.Second))
	}
	fail := map[string][]Op{
		"stale read after an acknowledged write": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(0, Upsert, 1, 200, 11, 20, OK),
			op(1, Lookup, 1, 100, 21, 22, OK),
		},
		"lost acknowledged write": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(1, Lookup, 1, Absent, 11, 12, OK),
		},
		"value goes back": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(1, Upsert, 1, 200, 0, 10, OK),
			op(0, Lookup, 1, 200, 11, 12, OK),
			op(0, Lookup, 1, 100, 13, 14, OK),
		},
		"read of a value never written": {
			op(0, Upsert, 1, 100, 0, 10, OK),
			op(0, Lookup, 1, 300, 11, 12, OK),
		},
	}
	for name, h := range fail {
		wantFail(t, name, CheckRegisters(h, 10*time.Second), "not linearizable")
	}
	// The problem names the key that fails, not the first key.
	mixed := append(append([]Op(nil), pass["keys are independent"]...), op(0, Upsert, 7, 700, 0, 10, OK), op(0, Lookup, 7, Absent, 11, 12, OK))
	wantFail(t, "second key fails", CheckRegisters(mixed, 10*time.Second), "key 7 (")
}

func TestCheckChangelog(t *testing.T) {
	ops := []Op{
		op(0, Upsert, 1, 100, 0, 10, OK),
		op(0, Upsert, 1, 101, 11, 20, OK),
		op(1, Upsert, 2, 200, 0, 10, OK),
		op(1, Upsert, 2, 201, 11, 0, Unknown),
	}
	good := []Record{
		{0, 0, 1, 100, "+I"}, {1, 0, 2, 200, "+I"}, {0, 1, 1, 100, "-U"}, {0, 2, 1, 101, "+U"},
	}
	final := map[int64]int64{1: 101, 2: 200}
	wantPass(t, "changelog matches", CheckChangelog(ops, good, final))
	withLate := append(good[:len(good):len(good)], Record{1, 1, 2, 200, "-U"}, Record{1, 2, 2, 201, "+U"})
	wantPass(t, "unknown upsert committed", CheckChangelog(ops, withLate, map[int64]int64{1: 101, 2: 201}))

	wantFail(t, "lookup disagrees", CheckChangelog(ops, good, map[int64]int64{1: 100, 2: 200}), "replaying the changelog gives 101")
	wantFail(t, "missing key in lookups", CheckChangelog(ops, good, map[int64]int64{1: 101}), "final lookup returns no row")
	wantFail(t, "lost upsert", CheckChangelog(ops, good[:2], map[int64]int64{1: 100, 2: 200}), "key 1 = 101 is not in the changelog (lost)")
	reordered := []Record{{0, 0, 1, 101, "+I"}, {0, 1, 1, 101, "-U"}, {0, 2, 1, 100, "+U"}, {1, 0, 2, 200, "+I"}}
	wantFail(t, "reordered", CheckChangelog(ops, reordered, map[int64]int64{1: 100, 2: 200}), "yet comes after it")
	dup := append(good[:len(good):len(good)], Record{0, 3, 1, 101, "-U"}, Record{0, 4, 1, 101, "+U"})
	wantFail(t, "duplicate", CheckChangelog(ops, dup, final), "in the changelog twice")
	phantom := append(good[:len(good):len(good)], Record{1, 1, 2, 200, "-U"}, Record{1, 2, 2, 999, "+U"})
	wantFail(t, "phantom", CheckChangelog(ops, phantom, map[int64]int64{1: 101, 2: 999}), "which no client upserted")
	badBefore := []Record{{0, 0, 1, 100, "+I"}, {0, 1, 1, 555, "-U"}, {0, 2, 1, 101, "+U"}, {1, 0, 2, 200, "+I"}}
	wantFail(t, "-U with the wrong before image", CheckChangelog(ops, badBefore, final), "-U of key 1 = 555")
}

func TestOpsRoundTrip(t *testing.T) {
	ops := []Op{op(0, Upsert, 1, 100, 0, 10, OK), op(1, Lookup, 1, Absent, 3, 4, OK), op(2, Append, 7, 0, 5, 0, Unknown)}
	var buf bytes.Buffer
	if err := WriteOps(&buf, ops); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(`{"p":3,"k":"app`) // a killed writer's last line
	got, err := ReadOps(&buf)
	if err != nil || len(got) != len(ops) || got[1].Value != Absent || got[2].Outcome != Unknown {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if _, err := ReadOps(strings.NewReader("garbage\n{}\n")); err == nil {
		t.Fatal("a malformed line before the last was accepted")
	}
}
