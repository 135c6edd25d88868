package kafka_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsConfigsNotNull: a created topic's configs (v5+) are an empty list, never
// null, which Kafka's Java AdminClient dereferences (tests/flink's kafka_produced check
// creates its topic with it).
func TestCreateTopicsConfigsNotNull(t *testing.T) {
	n := startNode(t, nil)
	cl := client(t, n.kafka)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "configs_not_null", 1, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if resp.Version < 5 {
		t.Fatalf("CreateTopics answered at v%d; the configs field needs v5+", resp.Version)
	}
	got := resp.Topics[0]
	if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if got.Configs == nil {
		t.Fatal("configs of the created topic are null; want a list")
	}
}
