package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/tablet"
)

// ListOffsets (2): v1-v6. -2 is the log start, -1 the high watermark, a timestamp the first
// offset whose batch was appended at or after it (Strom indexes append times, not the
// producers' record timestamps).
func init() { register(2, 1, 6, handleListOffsets) }

func handleListOffsets(_ context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.ListOffsetsRequest)
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		info, ok := s.topic(t.Topic)
		allowed := ok && req.conn.allowed(auth.OpDescribe, auth.TableResource(info.Path.Database, info.Path.Table))
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Timestamp, rp.Offset, rp.LeaderEpoch = p.Partition, -1, -1, -1
			switch {
			case !ok || p.Partition < 0 || p.Partition >= info.NumBuckets():
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !allowed:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				b := cluster.Bucket{TableID: info.ID, PartitionID: cluster.NoPartition, Bucket: p.Partition}
				var off int64
				var err error
				switch ts := p.Timestamp; {
				case ts == -2:
					off, err = s.opts.Log.ListLogOffset(b, tablet.OffsetEarliest, nil)
				case ts == -1:
					off, err = s.opts.Log.ListLogOffset(b, tablet.OffsetLatest, nil)
				case ts >= 0:
					off, err = s.opts.Log.ListLogOffset(b, tablet.OffsetTimestamp, &ts)
					rp.Timestamp = ts
				default:
					rp.ErrorCode = kerr.UnsupportedVersion.Code
				}
				if err != nil {
					rp.ErrorCode = errCode(err)
				} else if rp.ErrorCode == 0 {
					rp.Offset = off
					rp.LeaderEpoch = 0
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
