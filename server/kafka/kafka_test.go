package kafka_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
)

// node is a single-node server with a Kafka listener.
type node struct {
	kafka, fluss string
	n            *server.Node
}

func startNode(t *testing.T, set map[string]string) *node {
	t.Helper()
	return startNodeIn(t, t.TempDir(), set)
}

func startNodeIn(t *testing.T, dir string, set map[string]string) *node {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}, {Name: "KAFKA", Host: "127.0.0.1", Port: 0}}
	if err := cfg.Set("kafka.enabled", "true"); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n, err := server.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
		cancel()
	})
	return &node{kafka: n.Addr("kafka"), fluss: n.Addr("coordinator"), n: n}
}

func client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		t.Fatalf("CreateTopics %s: %v (%s)", name, err, msg)
	}
}

// consume polls until want records arrived.
func consume(t *testing.T, cl *kgo.Client, want int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(out), want)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestProduceConsume produces keyed records with headers with each compression and acks
// setting, consumes them back, and reads the rows from the table with the Fluss client.
func TestProduceConsume(t *testing.T) {
	nd := startNode(t, nil)
	admin := client(t, nd.kafka)
	createTopic(t, admin, "events", 2)
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	ctx := context.Background()
	var sent []string
	for i, c := range codecs {
		acks := []kgo.Acks{kgo.AllISRAcks(), kgo.LeaderAck(), kgo.AllISRAcks(), kgo.LeaderAck(), kgo.AllISRAcks()}[i]
		opts := []kgo.Opt{kgo.ProducerBatchCompression(c.codec), kgo.RequiredAcks(acks)}
		if acks != kgo.AllISRAcks() {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		p := client(t, nd.kafka, opts...)
		for j := 0; j < 20; j++ {
			v := fmt.Sprintf("%s-%d", c.name, j)
			r := &kgo.Record{Topic: "events", Key: []byte(fmt.Sprintf("k%d", j%4)), Value: []byte(v),
				Headers: []kgo.RecordHeader{{Key: "codec", Value: []byte(c.name)}, {Key: "n", Value: []byte(fmt.Sprint(j))}}}
			p.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce %s: %v", r.Value, err)
				}
			})
			sent = append(sent, v)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cons := client(t, nd.kafka, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := consume(t, cons, len(sent))
	var got []string
	keyOf := map[string]string{}
	for _, r := range recs {
		got = append(got, string(r.Value))
		keyOf[string(r.Value)] = string(r.Key)
		if len(r.Headers) != 2 || r.Headers[0].Key != "codec" || r.Headers[1].Key != "n" {
			t.Errorf("record %s: headers %v", r.Value, r.Headers)
		}
	}
	slices.Sort(got)
	slices.Sort(sent)
	if !slices.Equal(got, sent) {
		t.Fatalf("consumed %d records, want %d:\n%v\n%v", len(got), len(sent), got, sent)
	}
	// Records of one key are in one partition, in order (the client's default partitioner).
	if keyOf["gzip-5"] != "k1" {
		t.Errorf("key of gzip-5 = %q", keyOf["gzip-5"])
	}

	// The same rows, read as the log table kafka.events by the Fluss client.
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: nd.fluss})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	table, err := conn.Table(ctx, fluss.NewTablePath("kafka", "events"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.NewScan().CreateLogScanner()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.SubscribeBuckets(ctx, map[int32]int64{0: fluss.EarliestOffset, 1: fluss.EarliestOffset}); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for len(rows) < len(sent) {
		rs, err := sc.Poll(ctx, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			t.Fatalf("Fluss scan: %d of %d rows", len(rows), len(sent))
		}
		for _, r := range rs {
			rows = append(rows, string(r.Row[1].([]byte)))
			if string(r.Row[0].([]byte)) != keyOf[string(r.Row[1].([]byte))] {
				t.Errorf("row %v: key differs from the Kafka record's", r.Row)
			}
		}
	}
	slices.Sort(rows)
	if !slices.Equal(rows, sent) {
		t.Errorf("Fluss rows differ:\n%v", rows)
	}
}
