package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
)

// TestKillAutoIncrementLeader kills -9 the leader of a bucket of a table with an
// auto-increment column (docs/primary-keys.md §2.9) between two rounds of inserts and
// updates: the new leader takes a fresh range from the table's counter in etcd, so every id
// stays unique over the table, the ids assigned before the failover are kept (by lookups
// served by the new leader and by updates), and the restarted node serves the same rows.
func TestKillAutoIncrementLeader(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	schema := fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.BigInt()), fluss.NewColumn("name", fluss.String()), fluss.NewColumn("uid", fluss.BigInt()),
	}, "id")
	schema.AutoIncrement = []string{"uid"}
	table := createTable(t, ctx, conn, "autoinc_leader_kill", fluss.TableDescriptor{Schema: schema,
		Properties: map[string]string{"table.auto-increment.cache-size": "16"}})
	w, err := table.NewUpsert().PartialUpdateByName("id", "name").CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const keys = 200
	write := func(from, to int64, tag string) {
		t.Helper()
		var results []*fluss.WriteResult
		for k := from; k < to; k++ {
			r, err := w.Upsert(ctx, fluss.Row{k, fmt.Sprintf("%s%d", tag, k), nil})
			if err != nil {
				t.Fatalf("upsert %d: %v", k, err)
			}
			results = append(results, r)
		}
		for i, r := range results {
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			err := r.Wait(wctx)
			cancel()
			if err != nil {
				t.Fatalf("upsert %d: %v", from+int64(i), err)
			}
		}
	}
	lk, err := table.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	uids := func(from, to int64) map[int64]int64 {
		t.Helper()
		out := map[int64]int64{}
		for k := from; k < to; k++ {
			row, err := lk.Lookup(ctx, fluss.Row{k})
			if err != nil || row == nil {
				t.Fatalf("lookup %d: %v %v", k, row, err)
			}
			uid, ok := row[2].(int64)
			if !ok {
				t.Fatalf("key %d: uid %v", k, row[2])
			}
			out[k] = uid
		}
		return out
	}

	write(0, keys, "a")
	before := uids(0, keys)
	victim := c.Node(leaderOf(t, ctx, conn, table, 0))
	t.Logf("killing node %d, leader of bucket 0", victim.ID)
	victim.Kill()
	write(keys, 2*keys, "b") // inserts: ids from the new leaders' ranges
	write(0, keys, "c")      // updates: ids kept
	after := uids(0, 2*keys)
	seen := map[int64]int64{}
	for k, uid := range after {
		if k < keys && uid != before[k] {
			t.Fatalf("key %d: uid %d before the failover, %d after", k, before[k], uid)
		}
		if other, dup := seen[uid]; dup {
			t.Fatalf("uid %d of key %d is also the uid of key %d", uid, k, other)
		}
		seen[uid] = k
	}
	victim.Start()
	victim.WaitReady(60 * time.Second)
	checkReplicasIdentical(t, c, table)
}
