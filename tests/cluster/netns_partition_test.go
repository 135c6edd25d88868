package cluster_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/tests/history"
	"github.com/stromdb/strom/tests/netns"
)

// seedEnv replays a partition schedule: the test logs the seed it ran with. onlyEnv, a
// comma-separated list of fault kind names, restricts the schedule to them. keepEnv names a
// directory where a failing run leaves its histories and final read.
const (
	seedEnv = "STROM_PARTITION_SEED"
	onlyEnv = "STROM_PARTITION_FAULTS"
	keepEnv = "STROM_PARTITION_KEEP"
)

// TestNetworkPartitions runs a 3-node RF=3 cluster, each node in a network namespace of its
// own, with three client processes in namespaces of their own running acks=all appends,
// upserts and lookups, and injects a random schedule of partitions (see the fault kinds in
// netns_faults_test.go): after each, the link is healed while the writes run and the test
// waits until every client is acknowledged again. At the end the history of every client is
// checked (tests/history): no acknowledged append lost, duplicated or reordered within its
// bucket, upserts and lookups linearizable per key, the changelog consistent with lookups;
// and the replicas byte-identical.
//
// The short version injects each kind of fault once; CLUSTER_LONG=1 three times, with longer
// holds. STROM_PARTITION_SEED=N replays a schedule.
func TestNetworkPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	if err := netns.Available(); err != nil {
		t.Skipf("partition tests need network namespaces: %v", err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
		seed = v
	}
	t.Logf("partition schedule seed %d (replay: %s=%d)", seed, seedEnv, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("partition schedule seed %d: replay with %s=%d", seed, seedEnv, seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed>>32|1))

	set := maps.Clone(faultOptions)
	nw := netns.New(t)
	c := netns.StartCluster(t, nw, stromBin, 3, set)
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("node %d log: %s", n.ID, n.LogPath())
			}
		}
	})
	r := &partitionRun{t: t, c: c, nw: nw, rng: rng, ctl: nw.AddHost("ctl")}
	for i := range 3 {
		r.clients = append(r.clients, nw.AddHost(fmt.Sprintf("c%d", i+1)))
	}
	r.base = netns.WorkerConfig{
		Bootstrap: c.Bootstrap(), Database: "part", LogTable: "log", PKTable: "kv",
		Buckets: 2, Keys: 256, EtcdEndpoints: c.EtcdEndpoints(), Acks1Table: "log_acks1",
	}
	setup := r.base
	setup.Mode = "setup"
	if err := netns.RunWorker(t, r.ctl, setup, 2*time.Minute, nil); err != nil {
		t.Fatalf("setup: %v", err)
	}
	for i, h := range r.clients {
		cfg := r.base
		cfg.Mode, cfg.Proc = "workload", i+1
		cfg.Out = filepath.Join(t.TempDir(), fmt.Sprintf("history-%d.jsonl", i+1))
		r.workers = append(r.workers, netns.StartWorker(t, h, cfg))
	}
	r.waitProgress(time.Now(), time.Minute)

	rounds, hold := 1, [2]time.Duration{3 * time.Second, 5 * time.Second}
	if long() {
		rounds, hold = 3, [2]time.Duration{5 * time.Second, 12 * time.Second}
	}
	kinds := faultKinds
	if only := os.Getenv(onlyEnv); only != "" {
		kinds = nil
		for _, f := range faultKinds {
			if strings.Contains(","+only+",", ","+f.name+",") {
				kinds = append(kinds, f)
			}
		}
		if len(kinds) == 0 {
			t.Fatalf("%s=%q names no fault kind", onlyEnv, only)
		}
	}
	var schedule []faultKind
	for range rounds {
		perm := rng.Perm(len(kinds))
		for _, i := range perm {
			schedule = append(schedule, kinds[i])
		}
	}
	for i, f := range schedule {
		d := hold[0] + time.Duration(rng.Int64N(int64(hold[1]-hold[0])+1))
		r.inject(i, f, d)
	}

	for _, w := range r.workers {
		if err := w.Stop(time.Minute); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	ops := r.history()
	read := r.base
	read.Mode = "read"
	var final netns.ReadResult
	if err := netns.RunWorker(t, r.ctl, read, 2*time.Minute, &final); err != nil {
		t.Fatalf("final read: %v", err)
	}
	counts := map[history.Outcome]int{}
	for _, o := range ops {
		if o.Kind != history.Lookup {
			counts[o.Outcome]++
		}
	}
	t.Logf("history: %d operations; writes ok %d, failed %d, unknown %d; log %d records, changelog %d",
		len(ops), counts[history.OK], counts[history.Fail], counts[history.Unknown], len(final.Log), len(final.Changelog))
	appendBucket, keyBucket := map[int64]int32{}, map[int64]int32{}
	for _, rec := range final.Log {
		appendBucket[rec.Key] = rec.Bucket
	}
	for _, rec := range final.Changelog {
		keyBucket[rec.Key] = rec.Bucket
	}
	acks1 := r.acks1History()
	lost1 := acks1Lost(acks1, final.Acks1Log)
	for _, f := range r.done {
		lost := 0
		for _, o := range lost1 {
			if o.Return >= f.start.UnixNano() && o.Return <= f.recovered.UnixNano() {
				lost++
			}
		}
		t.Logf("fault %-40s held %4.1fs, healed->every client acked %4.1fs; longest time a bucket went without an acknowledged append %4.1fs, upsert %4.1fs; acks=1 appends lost %d",
			f.name, f.heal.Sub(f.start).Seconds(), f.recovered.Sub(f.heal).Seconds(),
			longestGap(ops, history.Append, appendBucket, f.start, f.recovered).Seconds(),
			longestGap(ops, history.Upsert, keyBucket, f.start, f.recovered).Seconds(), lost)
	}
	t.Logf("acks=1 appends: %d acknowledged, %d of them lost (measured, not a failure: acks=1 answers before the followers have the batch)", countOK(acks1), len(lost1))
	check := func(what string, p history.Problems) {
		if err := p.Err(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	t.Cleanup(func() {
		if dir := os.Getenv(keepEnv); dir != "" && t.Failed() {
			r.keep(dir, final)
		}
	})
	check("appends", history.CheckAppends(ops, final.Log))
	check("upserts and lookups", history.CheckRegisters(ops, 30*time.Second))
	check("changelog", history.CheckChangelog(ops, final.Changelog, final.Final))
	cc := c.AsClustertest()
	for _, id := range []int64{final.LogTableID, final.PKTableID} {
		for b := range r.base.Buckets {
			deadline := time.Now().Add(time.Minute)
			for {
				err := compareReplicas(cc, id, b)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("replicas of table %d bucket %d differ a minute after the last heal: %v", id, b, err)
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

// longestGap is the longest time within [from, to] that a bucket went without an
// acknowledgement of an operation of kind, counting from from and up to the bucket's first
// acknowledgement after to; bucketOf maps an operation's key to its bucket (from the final
// read: an append's id, an upsert's key).
func longestGap(ops []history.Op, kind history.Kind, bucketOf map[int64]int32, from, to time.Time) time.Duration {
	acks := map[int32][]int64{}
	for _, o := range ops {
		if o.Kind == kind && o.Outcome == history.OK {
			if b, ok := bucketOf[o.Key]; ok {
				acks[b] = append(acks[b], o.Return)
			}
		}
	}
	var gap int64
	for _, times := range acks {
		slices.Sort(times)
		last, end := from.UnixNano(), to.UnixNano()
		for _, a := range times {
			if a < last {
				continue
			}
			gap = max(gap, a-last)
			last = a
			if a > end {
				break
			}
		}
	}
	return time.Duration(gap)
}

// keep copies the histories and the final read into dir, for a look after the test.
func (r *partitionRun) keep(dir string, final netns.ReadResult) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Logf("keep: %v", err)
		return
	}
	for _, w := range r.workers {
		for _, suffix := range []string{"", ".acks1"} {
			if b, err := os.ReadFile(w.Cfg.Out + suffix); err == nil {
				os.WriteFile(filepath.Join(dir, filepath.Base(w.Cfg.Out)+suffix), b, 0o644)
			}
		}
	}
	b, _ := json.Marshal(final)
	os.WriteFile(filepath.Join(dir, "final.json"), b, 0o644)
	r.t.Logf("histories and final read kept in %s", dir)
}

// acks1History is every client's acks=1 appends.
func (r *partitionRun) acks1History() []history.Op {
	r.t.Helper()
	var all []history.Op
	for _, w := range r.workers {
		f, err := os.Open(w.Cfg.Out + ".acks1")
		if err != nil {
			r.t.Fatal(err)
		}
		ops, err := history.ReadOps(f)
		f.Close()
		if err != nil {
			r.t.Fatalf("acks=1 history of worker %d: %v", w.Cfg.Proc, err)
		}
		all = append(all, ops...)
	}
	return all
}

// acks1Lost returns the acknowledged appends of ops missing from log.
func acks1Lost(ops []history.Op, log []history.Record) []history.Op {
	in := map[int64]bool{}
	for _, r := range log {
		in[r.Key] = true
	}
	var lost []history.Op
	for _, o := range ops {
		if o.Outcome == history.OK && !in[o.Key] {
			lost = append(lost, o)
		}
	}
	return lost
}

func countOK(ops []history.Op) int {
	n := 0
	for _, o := range ops {
		if o.Outcome == history.OK {
			n++
		}
	}
	return n
}
