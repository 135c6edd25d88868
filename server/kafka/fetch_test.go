package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchEmptyPartitionHasEmptyRecords: a partition with nothing to return (an empty topic,
// or an error) carries empty records, not null ones. Kafka never sends null records and
// librdkafka refuses them ("invalid MessageSetSize -1"), so its consumers could not read a
// topic that was empty when they first fetched.
func TestFetchEmptyPartitionHasEmptyRecords(t *testing.T) {
	nd := startNode(t, nil)
	cl := client(t, nd.kafka)
	createTopic(t, cl, "empty", 1)
	for _, version := range []int16{4, 11, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "empty"
		for _, p := range []int32{0, 7} { // 7: an unknown partition, answered with an error
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.LogStartOffset = p, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err != nil {
			t.Fatalf("Fetch v%d: %v", version, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("Fetch v%d: unexpected response shape %+v", version, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			want := int16(0)
			if p.Partition == 7 {
				want = kerr.UnknownTopicOrPartition.Code
			}
			if p.ErrorCode != want {
				t.Errorf("Fetch v%d partition %d: error %d, want %d", version, p.Partition, p.ErrorCode, want)
			}
			if p.RecordBatches == nil {
				t.Errorf("Fetch v%d partition %d: null records, want empty", version, p.Partition)
			}
		}
	}
}
