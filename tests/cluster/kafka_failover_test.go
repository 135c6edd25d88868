package cluster_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/tests/clustertest"
)

// The Kafka failover scenarios: an idempotent acks=all franz-go producer streams keyed
// messages (each value is the message's id) while a server dies with kill -9; the producer
// and the consumers are the plain kgo clients, with no retry of their own. Afterwards every
// acknowledged message must be in the topic exactly once, at the offset its delivery report
// gave (docs/kafka.md, "Idempotent producers and transactions").

const kafkaTopicPartitions = 4

// TestKafkaKillLeaderDuringIdempotentProduce kills -9 the leader of a partition of an RF=3
// topic while the producer streams and a consumer group reads: the producer and the consumer
// move to the new leader by themselves; the producer sees no error; every acknowledged
// message is in the log exactly once (so the retries of in-flight batches that reached the
// new leader before the kill were deduplicated there); and the group member reads each
// exactly once. The group is chosen so that its coordinator is neither the victim nor moved
// by the victim's death, so what is measured is the move of produce and fetch.
func TestKafkaKillLeaderDuringIdempotentProduce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: faultOptions, Kafka: true})
	ctx := testContext(t)
	seeds := kafkaSeeds(c)
	const topic = "kafka_leader_kill"
	leaders := createKafkaTopic(t, ctx, seeds, topic, 3)
	victim := leaders[0]
	var alive []int32
	for _, n := range c.Nodes {
		if n.ID != victim {
			alive = append(alive, n.ID)
		}
	}
	group := stableGroup(t, ctx, seeds, victim, alive)

	before, after := 3000, 3000
	if long() {
		before, after = 20000, 20000
	}
	p := startKafkaProducer(t, ctx, seeds, topic)
	g := startGroupMember(t, ctx, seeds, topic, group)
	p.waitAcked(t, before, 60*time.Second)
	t.Logf("killing node %d, leader of partition 0 (partition leaders %v), after %d acknowledged messages; group %s", victim, leaders, p.count(), group)
	c.Node(victim).Kill()
	p.waitAcked(t, p.count()+after, 90*time.Second)
	acked := p.stop(t)

	log := readKafkaTopic(t, ctx, seeds, topic)
	checkKafkaExactlyOnce(t, "the log", acked, log)
	read := g.waitRead(t, len(acked), 90*time.Second)
	checkKafkaExactlyOnce(t, "the group member", acked, read)
}

// TestKafkaKillServerDuringIdempotentProduce kills -9 a single-node server while the producer
// streams and starts it again: the producer waits and resends its in-flight batches; the
// restarted log rebuilt its writer state from the segments, so the batches that were
// appended before the kill are answered as duplicates, and every acknowledged message is in
// the topic exactly once.
func TestKafkaKillServerDuringIdempotentProduce(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Nodes: 1, Kafka: true, Set: map[string]string{
		"default.replication.factor": "1",
		"tablet-server.lease-ttl":    "2s",
		"coordinator.lease-ttl":      "2s",
	}})
	ctx := testContext(t)
	seeds := kafkaSeeds(c)
	const topic = "kafka_server_kill"
	createKafkaTopic(t, ctx, seeds, topic, 1)

	before, after := 3000, 3000
	if long() {
		before, after = 20000, 20000
	}
	p := startKafkaProducer(t, ctx, seeds, topic)
	p.waitAcked(t, before, 60*time.Second)
	n := c.Nodes[0]
	t.Logf("killing the server after %d acknowledged messages", p.count())
	n.Kill()
	n.Start()
	n.WaitReady(60 * time.Second)
	p.waitAcked(t, p.count()+after, 90*time.Second)
	acked := p.stop(t)
	checkKafkaExactlyOnce(t, "the log", acked, readKafkaTopic(t, ctx, seeds, topic))
}

func kafkaSeeds(c *clustertest.Cluster) []string {
	var seeds []string
	for _, n := range c.Nodes {
		seeds = append(seeds, n.KafkaAddr)
	}
	return seeds
}

func kafkaClient(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(250 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createKafkaTopic creates topic with kafkaTopicPartitions partitions and waits until every
// partition has a leader, which it returns per partition.
func createKafkaTopic(t *testing.T, ctx context.Context, seeds []string, topic string, rf int16) []int32 {
	t.Helper()
	cl := kafkaClient(t, seeds)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, kafkaTopicPartitions, rf
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		m, err := mreq.RequestWith(ctx, cl)
		if err == nil && len(m.Topics) == 1 && len(m.Topics[0].Partitions) == kafkaTopicPartitions {
			leaders := make([]int32, kafkaTopicPartitions)
			ok := true
			for _, p := range m.Topics[0].Partitions {
				leaders[p.Partition] = p.Leader
				ok = ok && p.ErrorCode == 0 && p.Leader >= 0
			}
			if ok {
				return leaders
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s has no leader for every partition: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stableGroup returns a group id whose coordinator is the same broker among all brokers and
// among alive (the brokers after the victim's death), and is not the victim. The rule is the
// listener's (server/kafka/groups.go, coordinatorFor: FNV-1a of the group id over the sorted
// live broker ids); FindCoordinator confirms it for the current brokers.
func stableGroup(t *testing.T, ctx context.Context, seeds []string, victim int32, alive []int32) string {
	t.Helper()
	all := slices.Sorted(slices.Values(append([]int32{victim}, alive...)))
	coord := func(group string, ids []int32) int32 {
		h := fnv.New32a()
		h.Write([]byte(group))
		return ids[h.Sum32()%uint32(len(ids))]
	}
	for i := range 1000 {
		group := fmt.Sprintf("kafka_failover_%d", i)
		want := coord(group, all)
		if want == victim || coord(group, alive) != want {
			continue
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		resp, err := req.RequestWith(ctx, kafkaClient(t, seeds))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("FindCoordinator: %v %d", err, resp.ErrorCode)
		}
		if resp.NodeID != want {
			t.Fatalf("group %s is coordinated by %d, the test's rule says %d: update stableGroup", group, resp.NodeID, want)
		}
		return group
	}
	t.Fatal("no group id with a stable coordinator")
	return ""
}

// kafkaAck is where a message was acknowledged (or read).
type kafkaAck struct {
	partition int32
	offset    int64
}

// kafkaProducer streams messages 0, 1, 2, ... (value: the id, big-endian; key: the id as
// text, so messages spread over the partitions) through one idempotent acks=all kgo client.
type kafkaProducer struct {
	cl    *kgo.Client
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	acked map[int64]kafkaAck
	errs  []error
}

func startKafkaProducer(t *testing.T, ctx context.Context, seeds []string, topic string) *kafkaProducer {
	p := &kafkaProducer{
		cl: kafkaClient(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProduceRequestTimeout(10*time.Second), kgo.MaxBufferedRecords(2000)),
		done:  make(chan struct{}),
		acked: map[int64]kafkaAck{},
	}
	t.Cleanup(p.end) // before the client closes, if the test ended early
	go func() {
		for id := int64(0); ; id++ {
			select {
			case <-p.done:
				return
			default:
			}
			val := binary.BigEndian.AppendUint64(nil, uint64(id))
			rec := &kgo.Record{Key: fmt.Appendf(nil, "k%d", id), Value: val,
				Headers: []kgo.RecordHeader{{Key: "id", Value: val}}}
			p.cl.Produce(ctx, rec, func(r *kgo.Record, err error) { // blocks while 2000 are buffered
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.errs = append(p.errs, fmt.Errorf("message %d: %w", id, err))
					return
				}
				p.acked[id] = kafkaAck{r.Partition, r.Offset}
			})
		}
	}()
	return p
}

func (p *kafkaProducer) end() { p.once.Do(func() { close(p.done) }) }

func (p *kafkaProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

func (p *kafkaProducer) waitAcked(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for p.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d messages acknowledged after %s", p.count(), n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the stream, waits for every buffered message's answer and returns the
// acknowledged ones; a failed delivery fails the test (the client retries by itself).
func (p *kafkaProducer) stop(t *testing.T) map[int64]kafkaAck {
	t.Helper()
	p.end()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, err := range p.errs {
		if i == 5 {
			t.Errorf("... and %d more failed deliveries", len(p.errs)-5)
			break
		}
		t.Errorf("failed delivery: %v", err)
	}
	return p.acked
}

// groupMember is one consumer group member that commits synchronously after each poll,
// before a rebalance may take its partitions, so each message is delivered to it once.
type groupMember struct {
	mu   sync.Mutex
	read map[int64][]kafkaAck
	n    int
}

func startGroupMember(t *testing.T, ctx context.Context, seeds []string, topic, group string) *groupMember {
	g := &groupMember{read: map[int64][]kafkaAck{}}
	cl := kafkaClient(t, seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll())
	ctx, cancel := context.WithCancel(ctx)
	exited := make(chan struct{})
	t.Cleanup(func() { cancel(); <-exited }) // before the client closes
	go func() {
		defer close(exited)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Logf("group member: fetch %s/%d: %v", topic, p, err)
				}
			})
			recs := fs.Records()
			g.mu.Lock()
			for _, r := range recs {
				id := int64(binary.BigEndian.Uint64(r.Value))
				g.read[id] = append(g.read[id], kafkaAck{r.Partition, r.Offset})
				g.n++
			}
			g.mu.Unlock()
			if len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err != nil && ctx.Err() == nil {
					t.Errorf("group member: commit: %v", err)
				}
			}
			cl.AllowRebalance()
		}
	}()
	return g
}

// waitRead waits until the member read n messages and returns what it read.
func (g *groupMember) waitRead(t *testing.T, n int, timeout time.Duration) map[int64][]kafkaAck {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		g.mu.Lock()
		got := g.n
		g.mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group member read %d of %d messages after %s", got, n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate delivery would arrive now
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.read)
}

// readKafkaTopic reads every partition of topic from offset 0 to its high watermark.
func readKafkaTopic(t *testing.T, ctx context.Context, seeds []string, topic string) map[int64][]kafkaAck {
	t.Helper()
	cl := kafkaClient(t, seeds)
	req := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for p := range int32(kafkaTopicPartitions) {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	req.Topics = append(req.Topics, lt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	offsets := map[int32]kgo.Offset{}
	want := 0
	for _, p := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("ListOffsets of partition %d: %v", p.Partition, err)
		}
		offsets[p.Partition] = kgo.NewOffset().At(0)
		want += int(p.Offset)
	}
	rd := kafkaClient(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	out := map[int64][]kafkaAck{}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for got := 0; got < want; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of the %d records of %s", got, want, topic)
		}
		for _, r := range fs.Records() {
			id := int64(binary.BigEndian.Uint64(r.Value))
			out[id] = append(out[id], kafkaAck{r.Partition, r.Offset})
			got++
		}
	}
	return out
}

// checkKafkaExactlyOnce checks that what was read holds every acknowledged message exactly
// once, at its acknowledged place, and nothing else twice.
func checkKafkaExactlyOnce(t *testing.T, what string, acked map[int64]kafkaAck, read map[int64][]kafkaAck) {
	t.Helper()
	missing, dups, moved := 0, 0, 0
	for id, a := range acked {
		got := read[id]
		switch {
		case len(got) == 0:
			missing++
		case len(got) > 1:
			dups++
		case got[0] != a:
			moved++
		}
		if (len(got) != 1 || got[0] != a) && missing+dups+moved <= 5 {
			t.Errorf("%s: message %d acknowledged at %+v, read at %+v", what, id, a, got)
		}
	}
	for id, got := range read {
		if _, ok := acked[id]; !ok && len(got) > 1 {
			dups++
			t.Errorf("%s: unacknowledged message %d read %d times", what, id, len(got))
		}
	}
	if missing+dups+moved > 0 {
		t.Fatalf("%s: of %d acknowledged messages %d missing, %d duplicated, %d at another offset", what, len(acked), missing, dups, moved)
	}
	t.Logf("%s: %d acknowledged messages, each exactly once", what, len(acked))
}
