package cluster_test

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// TestKafkaDDLThroughStandby creates and deletes a topic through the Kafka listener of a node
// whose coordinator is a standby: the node names itself controller in Metadata, so a Kafka
// client sends it the DDL, which it forwards to the active coordinator (docs/kafka.md).
func TestKafkaDDLThroughStandby(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process cluster test (-short)")
	}
	c := clustertest.StartCluster(t, stromBin, clustertest.ClusterOptions{Set: faultOptions, Kafka: true})
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	active := activeCoordinator(t, ctx, c, conn)
	var standby *clustertest.Node
	for _, n := range c.Nodes {
		if n != active {
			standby = n
			break
		}
	}
	t.Logf("active coordinator on node %d; Kafka DDL through node %d", active.ID, standby.ID)
	cl, err := kgo.NewClient(kgo.SeedBrokers(standby.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)

	// The client sends DDL to the controller Metadata names: this node.
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if meta.ControllerID != standby.ID {
		t.Fatalf("Metadata through node %d names controller %d", standby.ID, meta.ControllerID)
	}

	// The DDL goes to this node's broker itself: a client routing it to the controller
	// retries NOT_CONTROLLER after a metadata refresh from any broker, which might hide a
	// standby's refusal.
	broker := cl.Broker(int(standby.ID))

	const topic = "through_standby"
	path := fluss.TablePath{Database: "kafka", Table: topic}
	create := func() (kmsg.CreateTopicsResponseTopic, error) {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 2, 3
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(ctx, broker)
		if err != nil {
			return kmsg.CreateTopicsResponseTopic{}, err
		}
		return resp.Topics[0], nil
	}
	got, err := create()
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if err := kerr.ErrorForCode(got.ErrorCode); err != nil {
		t.Fatalf("CreateTopics through a standby: %v (%v)", err, msgOf(got.ErrorMessage))
	}
	// The answer carries the topic id, which the standby knows once it has the table.
	if got.TopicID == [16]byte{} {
		t.Fatal("CreateTopics through a standby answered no topic id")
	}
	if ok, err := conn.Admin().TableExists(ctx, path); err != nil || !ok {
		t.Fatalf("table %s after CreateTopics: exists %v, %v", path, ok, err)
	}
	// The active coordinator's refusal comes back as Kafka's.
	again, err := create()
	if err != nil {
		t.Fatalf("CreateTopics again: %v", err)
	}
	if err := kerr.ErrorForCode(again.ErrorCode); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("CreateTopics of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	name := topic
	dt.Topic = &name
	del.Topics = append(del.Topics, dt)
	del.TopicNames = []string{topic} // before v6
	del.TimeoutMillis = 10000
	dresp, err := del.RequestWith(ctx, broker)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	if err := kerr.ErrorForCode(dresp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("DeleteTopics through a standby: %v (%v)", err, msgOf(dresp.Topics[0].ErrorMessage))
	}
	if ok, err := conn.Admin().TableExists(ctx, path); err != nil || ok {
		t.Fatalf("table %s after DeleteTopics: exists %v, %v", path, ok, err)
	}
}

func msgOf(m *string) string {
	if m == nil {
		return ""
	}
	return *m
}
