package tablet_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// BenchmarkReplicatedProduce measures PRODUCE_LOG acks=-1 of 100-row batches to one bucket
// through in-process tablet servers on loopback, with the bucket standalone (RF=1) or
// replicated to three servers (RF=3, every follower fsyncs before it fetches again), from
// 8 concurrent producers. It reports rows/s.
func BenchmarkReplicatedProduce(b *testing.B) {
	for _, rf := range []int{1, 3} {
		b.Run(map[int]string{1: "RF1", 3: "RF3"}[rf], func(b *testing.B) {
			c := newRCluster(b, rf, 1, time.Minute)
			c.table(1, false)
			replicas := []int32{1, 2, 3}[:rf]
			c.elect(1, replicas, 1, replicas)
			batch := rowBatch(100)
			const producers = 8
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for p := range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := &flusspb.ProduceLogRequest{Acks: proto.Int32(-1), TableId: proto.Int64(1), TimeoutMs: proto.Int32(30000),
						BucketsReq: []*flusspb.PbProduceLogReqForBucket{{BucketId: proto.Int32(0), Records: batch}}}
					for i := p; i < b.N; i += producers {
						var resp flusspb.ProduceLogResponse
						if err := c.nodes[1].client.Call(context.Background(), wire.ProduceLog, req, &resp); err != nil {
							b.Error(err)
							return
						}
						if r := resp.BucketsResp[0]; r.GetErrorCode() != 0 {
							b.Errorf("produce: %d %s", r.GetErrorCode(), r.GetErrorMessage())
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*100)/time.Since(start).Seconds(), "rows/s")
		})
	}
}
