package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/auth"
)

// OffsetCommit (8): v0-v8. Offsets are written to the group's record in the metadata store
// before the answer; a member of a live group must give its generation.
func init() { register(8, 0, 8, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.OffsetCommitRequest)
	resp := kmsg.NewPtrOffsetCommitResponse()
	code := s.isCoordinator(req.conn, r.Group)
	if code == 0 {
		code = s.groups.checkGeneration(r.Group, r.MemberID, r.Generation)
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	var c committed
	if code == 0 {
		var err error
		if c, _, err = s.loadCommitted(ctx, r.Group); err != nil {
			code = kerr.CoordinatorNotAvailable.Code
		}
	}
	changed := false
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		info, ok := s.topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case code != 0:
				rp.ErrorCode = code
			case !ok || p.Partition < 0 || p.Partition >= info.NumBuckets():
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !req.conn.allowed(auth.OpRead, auth.TableResource(info.Path.Database, info.Path.Table)):
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				if c.Offsets[t.Topic] == nil {
					c.Offsets[t.Topic] = map[int32]offsetV{}
				}
				md := ""
				if p.Metadata != nil {
					md = *p.Metadata
				}
				c.Offsets[t.Topic][p.Partition] = offsetV{Offset: p.Offset, Epoch: p.LeaderEpoch, Metadata: md}
				changed = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if changed {
		if err := s.storeCommitted(ctx, r.Group, c); err != nil {
			s.log.Warn("kafka: store committed offsets", "group", r.Group, "err", err)
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if resp.Topics[i].Partitions[j].ErrorCode == 0 {
						resp.Topics[i].Partitions[j].ErrorCode = kerr.CoordinatorNotAvailable.Code
					}
				}
			}
		}
	}
	return resp, nil
}

// checkGeneration refuses a commit by a member or generation the group does not have. A
// commit without member (generation -1) is accepted while the group has no members (a
// consumer that assigns partitions itself).
func (gc *groupCoordinator) checkGeneration(group, memberID string, gen int32) int16 {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	g := gc.get(group, false)
	if gen < 0 && memberID == "" {
		if g != nil && len(g.members) > 0 {
			return kerr.UnknownMemberID.Code
		}
		return 0
	}
	if g == nil || g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.generation != gen {
		return kerr.IllegalGeneration.Code
	}
	if g.state == stPreparing {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}
