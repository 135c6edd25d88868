package kafka

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// Fetch (1): v4-v12. Reads committed batches (up to the high watermark) of each partition,
// converted from the topic table's ARROW batches into Kafka record batches at the same
// offsets. MinBytes and MaxWaitMillis are honoured by waiting for the logs to change;
// MaxBytes and PartitionMaxBytes bound the stored bytes read (the first batch is returned
// whole). No fetch sessions: SessionID is always 0, so clients send full requests.
func init() { register(1, 4, 12, handleFetch) }

const maxFetchWait = 30 * time.Second

func handleFetch(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.FetchRequest)
	wait := min(time.Duration(r.MaxWaitMillis)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	for {
		resp, size, changed := s.fetchOnce(req.conn, r)
		if size >= int(r.MinBytes) || wait <= 0 || len(changed) == 0 {
			return resp, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return resp, nil
		}
		if !waitAny(ctx, changed, left) {
			return resp, nil
		}
	}
}

// waitAny waits until one channel closes (true), d passes or ctx ends (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	done := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	for _, c := range chans {
		go func() {
			select {
			case <-c:
				select {
				case done <- struct{}{}:
				case <-stop:
				}
			case <-stop:
			}
		}()
	}
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (s *Server) fetchOnce(c *conn, r *kmsg.FetchRequest) (*kmsg.FetchResponse, int, []<-chan struct{}) {
	resp := kmsg.NewPtrFetchResponse()
	budget := int(r.MaxBytes)
	if budget <= 0 {
		budget = 64 << 20
	}
	total := 0
	var changed []<-chan struct{}
	for _, t := range r.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		info, ok := s.topic(t.Topic)
		allowed := ok && c.allowed(auth.OpRead, auth.TableResource(info.Path.Database, info.Path.Table))
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.Partition, -1, -1, -1
			// Kafka answers an empty or failed partition with empty records, never null:
			// librdkafka refuses a null record set ("invalid MessageSetSize -1").
			rp.RecordBatches = []byte{}
			switch {
			case !ok || p.Partition < 0 || p.Partition >= info.NumBuckets():
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				limit := min(int(p.PartitionMaxBytes), max(budget, 1))
				if limit <= 0 {
					limit = 1
				}
				n, ch, err := s.fetchPartition(&rp, info, p.Partition, p.FetchOffset, limit)
				if err != nil {
					rp.ErrorCode = errCode(err)
				}
				if ch != nil {
					changed = append(changed, ch)
				}
				total += n
				budget -= n
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, changed
}

func (s *Server) fetchPartition(rp *kmsg.FetchResponseTopicPartition, t *cluster.TableInfo, partition int32, offset int64, limit int) (int, <-chan struct{}, error) {
	b := cluster.Bucket{TableID: t.ID, PartitionID: cluster.NoPartition, Bucket: partition}
	res, err := s.opts.Log.ReadLog(b, offset, limit)
	if err != nil {
		return 0, nil, err
	}
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
	if offset < res.LogStartOffset || offset > res.HighWatermark {
		return 0, nil, errOffsetOutOfRange
	}
	if len(res.Batches) == 0 {
		return 0, res.Changed, nil
	}
	// A Kafka batch is about as large as the ARROW batch it comes from: one allocation.
	out, err := toKafka(make([]byte, 0, len(res.Batches)+len(res.Batches)/8), res.Batches, func(sid int16) (*arrow.Schema, error) { return s.arrowSchema(t, sid) })
	if err != nil {
		return 0, nil, err
	}
	rp.RecordBatches = out
	return len(res.Batches), nil, nil
}
