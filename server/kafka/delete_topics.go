package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/auth"
)

// DeleteTopics (20): v0-v6. Drops the topic's table; by name or, from v6, by topic id.
func init() { register(20, 0, 6, handleDeleteTopics) }

func handleDeleteTopics(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.DeleteTopicsRequest)
	resp := kmsg.NewPtrDeleteTopicsResponse()
	names := r.TopicNames
	var ids [][16]byte
	for _, t := range r.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		} else {
			ids = append(ids, t.TopicID)
		}
	}
	for _, id := range ids {
		out := kmsg.NewDeleteTopicsResponseTopic()
		out.TopicID = id
		tid, ok := tableOfTopicID(id)
		t, found := s.opts.Catalog.TableByID(tid)
		if !ok || !found || t.Path.Database != s.opts.Config.Database || !isTopicTable(t) {
			out.ErrorCode = kerr.UnknownTopicID.Code
		} else {
			name := t.Path.Table
			out.Topic = &name
			out.ErrorCode, out.ErrorMessage = s.deleteTopic(ctx, req.conn, name)
		}
		resp.Topics = append(resp.Topics, out)
	}
	for _, name := range names {
		out := kmsg.NewDeleteTopicsResponseTopic()
		n := name
		out.Topic = &n
		if t, ok := s.topic(name); ok {
			out.TopicID = topicID(t.ID)
		}
		out.ErrorCode, out.ErrorMessage = s.deleteTopic(ctx, req.conn, name)
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}

func (s *Server) deleteTopic(ctx context.Context, c *conn, name string) (int16, *string) {
	t, ok := s.topic(name)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	if !c.allowed(auth.OpDrop, auth.TableResource(t.Path.Database, t.Path.Table)) {
		return kerr.TopicAuthorizationFailed.Code, nil
	}
	if err := s.opts.Catalog.DropTable(ctx, t.Path, false); err != nil {
		return errCode(err), errMessage(err)
	}
	return 0, nil
}
