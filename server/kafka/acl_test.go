package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/stromdb/strom/fluss"
)

// TestProduceNeedsWrite: with authorizer.enabled and SASL, Produce is checked against the
// table's ACLs. A user who may describe the topic but holds no WRITE gets Kafka's
// TOPIC_AUTHORIZATION_FAILED (and nothing is stored); once granted WRITE through the Fluss
// admin API, the same user's produce succeeds.
func TestProduceNeedsWrite(t *testing.T) {
	nd := startNode(t, map[string]string{
		"security.protocol.map":           "FLUSS:sasl,KAFKA:sasl",
		"security.sasl.plain.jaas.config": `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";`,
		"authorizer.enabled":              "true",
		"super.users":                     "User:admin",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := client(t, nd.kafka, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	createTopic(t, root, "guarded", 1)

	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: nd.fluss, SecurityProtocol: "sasl", SASLUsername: "admin", SASLPassword: "admin-secret"})
	if err != nil {
		t.Fatalf("connect as admin: %v", err)
	}
	defer conn.Close()
	table := fluss.TableResource(fluss.NewTablePath("kafka", "guarded"))
	grant := func(op fluss.OperationType) {
		t.Helper()
		results, err := conn.Admin().CreateAcls(ctx, []fluss.AclBinding{fluss.NewAclBinding(table, fluss.User("alice"), op)})
		if err != nil {
			t.Fatalf("grant %v: %v", op, err)
		}
		for _, r := range results {
			if r != nil {
				t.Fatalf("grant %v: %v", op, r)
			}
		}
	}
	// DESCRIBE only, so Metadata finds the topic and the refusal is Produce's own.
	grant(fluss.OperationDescribe)

	produce := func() error {
		alice := client(t, nd.kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
			kgo.RecordRetries(0), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()))
		defer alice.Close()
		pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
		defer pcancel()
		return alice.ProduceSync(pctx, &kgo.Record{Topic: "guarded", Value: []byte("v")}).FirstErr()
	}
	// Grants reach the tablet server's authorizer asynchronously: wait for DESCRIBE to apply
	// (Metadata stops refusing), then the refusal must be Produce's TOPIC_AUTHORIZATION_FAILED.
	var err1 error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err1 = produce(); errors.Is(err1, kerr.TopicAuthorizationFailed) || err1 == nil {
			break
		}
	}
	if !errors.Is(err1, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without WRITE: %v, want TOPIC_AUTHORIZATION_FAILED", err1)
	}
	end := listEnd(ctx, t, root, "guarded")
	if end != 0 {
		t.Fatalf("a refused produce stored records: end offset %d", end)
	}

	grant(fluss.OperationWrite)
	var err2 error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err2 = produce(); err2 == nil {
			break
		}
	}
	if err2 != nil {
		t.Fatalf("produce with WRITE: %v", err2)
	}
	if end := listEnd(ctx, t, root, "guarded"); end != 1 {
		t.Fatalf("end offset %d after one granted produce, want 1", end)
	}
}

// listEnd is the latest offset of partition 0 of topic, by ListOffsets.
func listEnd(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets: unexpected response shape %+v", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	return p.Offset
}
