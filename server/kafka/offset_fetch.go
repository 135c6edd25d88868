package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch (9): v1-v8. The group's committed offsets from the metadata store; -1 for a
// partition without one. A nil topic list asks for every committed partition.
func init() { register(9, 1, 8, handleOffsetFetch) }

func handleOffsetFetch(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.OffsetFetchRequest)
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.ver >= 8 {
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			var topics []kmsg.OffsetFetchRequestTopic
			for _, t := range g.Topics {
				topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
			if g.Topics == nil {
				topics = nil
			}
			ts, code := s.fetchOffsets(ctx, req.conn, g.Group, topics)
			rg.ErrorCode = code
			for _, t := range ts {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.Topic
				for _, p := range t.Partitions {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					gt.Partitions = append(gt.Partitions, gp)
				}
				rg.Topics = append(rg.Topics, gt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	resp.Topics, resp.ErrorCode = s.fetchOffsets(ctx, req.conn, r.Group, r.Topics)
	return resp, nil
}

func (s *Server) fetchOffsets(ctx context.Context, c *conn, group string, topics []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, int16) {
	if code := s.isCoordinator(c, group); code != 0 {
		return nil, code
	}
	cm, _, err := s.loadCommitted(ctx, group)
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	if topics == nil {
		for t, ps := range cm.Offsets {
			rt := kmsg.OffsetFetchRequestTopic{Topic: t}
			for p := range ps {
				rt.Partitions = append(rt.Partitions, p)
			}
			topics = append(topics, rt)
		}
	}
	var out []kmsg.OffsetFetchResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			if o, ok := cm.Offsets[t.Topic][p]; ok {
				md := o.Metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.Epoch, &md
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out, 0
}
