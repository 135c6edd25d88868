package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupTwoMembers runs a group of two consumers over four partitions: each record is
// consumed once between them, their commits are stored, and after a restart of the node a
// new member of the group resumes after the committed offsets.
func TestGroupTwoMembers(t *testing.T) {
	dir := t.TempDir()
	nd := startNodeIn(t, dir, nil)
	ctx := context.Background()
	admin := client(t, nd.kafka)
	createTopic(t, admin, "orders", 4)
	p := client(t, nd.kafka)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var mu sync.Mutex
	owned := map[string]int{} // partitions each member holds
	track := func(name string) kgo.Opt {
		return kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			owned[name] += len(m["orders"])
		})
	}
	untrack := func(name string) []kgo.Opt {
		f := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			owned[name] -= len(m["orders"])
		}
		return []kgo.Opt{kgo.OnPartitionsRevoked(f), kgo.OnPartitionsLost(f)}
	}
	opts := []kgo.Opt{kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}
	a := client(t, nd.kafka, append(append(opts, track("a")), untrack("a")...)...)
	b := client(t, nd.kafka, append(append(opts, track("b")), untrack("b")...)...)
	seen := map[string]int{}
	byMember := map[string]int{}
	poll := func(name string, cl *kgo.Client, done <-chan struct{}) {
		for {
			select {
			case <-done:
				return
			default:
			}
			fs := cl.PollRecords(ctx, 100)
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(topic string, p int32, err error) { t.Errorf("%s: fetch %s/%d: %v", name, topic, p, err) })
			recs := fs.Records()
			mu.Lock()
			for _, r := range recs {
				seen[string(r.Value)]++
				byMember[name]++
			}
			mu.Unlock()
			if len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err != nil {
					t.Logf("%s: commit: %v (retried after the rebalance)", name, err)
				}
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); poll("a", a, done) }()
	go func() { defer wg.Done(); poll("b", b, done) }()
	// Once both members hold partitions, produce; then wait until every record was seen.
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return owned["a"] > 0 && owned["b"] > 0 && owned["a"]+owned["b"] == 4
	})
	produce(0, 40)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 40 })
	mu.Lock()
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s consumed %d times", v, n)
		}
	}
	if byMember["a"] == 0 || byMember["b"] == 0 {
		t.Errorf("records by member: %v, want both to consume", byMember)
	}
	mu.Unlock()
	close(done)
	a.Close()
	b.Close()
	wg.Wait()

	// The group's committed offsets, through OffsetFetch, add up to the records.
	committedTotal := func(cl *kgo.Client) int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "billing"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0, 1, 2, 3}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, tp := range resp.Topics {
			for _, pp := range tp.Partitions {
				if pp.Offset > 0 {
					sum += pp.Offset
				}
			}
		}
		if sum == 0 && len(resp.Groups) > 0 {
			for _, tp := range resp.Groups[0].Topics {
				for _, pp := range tp.Partitions {
					if pp.Offset > 0 {
						sum += pp.Offset
					}
				}
			}
		}
		return sum
	}
	if got := committedTotal(admin); got != 40 {
		t.Fatalf("committed offsets add up to %d, want 40", got)
	}

	// Restart: the committed offsets are in the metadata store.
	if err := nd.n.Close(); err != nil {
		t.Fatal(err)
	}
	nd = startNodeIn(t, dir, nil)
	admin = client(t, nd.kafka)
	if got := committedTotal(admin); got != 40 {
		t.Fatalf("committed offsets after restart add up to %d, want 40", got)
	}
	p = client(t, nd.kafka)
	produce(40, 50)
	c := client(t, nd.kafka, opts...)
	recs := consume(t, c, 10)
	for _, r := range recs {
		var n int
		fmt.Sscan(string(r.Value), &n)
		if n < 40 {
			t.Errorf("resumed consumer got record %d, committed before the restart", n)
		}
	}
}

// waitFor polls cond until it holds; the test's own timeout bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Failed() {
			t.FailNow()
		}
		time.Sleep(20 * time.Millisecond)
	}
}
