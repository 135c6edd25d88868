package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// CreateTopics (19): v0-v7. Each topic becomes a log table of kafka.database of the topic
// shape (topics.go); the database is created on first use. Explicit replica assignments are
// refused; configs are passed as table properties.
func init() { register(19, 0, 7, handleCreateTopics) }

func handleCreateTopics(ctx context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.CreateTopicsRequest)
	resp := kmsg.NewPtrCreateTopicsResponse()
	db := s.opts.Config.Database
	for _, t := range r.Topics {
		out := kmsg.NewCreateTopicsResponseTopic()
		out.Topic = t.Topic
		out.NumPartitions, out.ReplicationFactor = t.NumPartitions, t.ReplicationFactor
		err := func() error {
			if !topicName.MatchString(t.Topic) {
				out.ErrorCode = kerr.InvalidTopicException.Code
				return nil
			}
			if len(t.ReplicaAssignment) > 0 {
				out.ErrorCode = kerr.InvalidReplicaAssignment.Code
				return nil
			}
			if !req.conn.allowed(auth.OpCreate, auth.DatabaseResource(db)) {
				out.ErrorCode = kerr.TopicAuthorizationFailed.Code
				return nil
			}
			parts := t.NumPartitions
			if parts == -1 {
				parts = s.opts.DefaultBuckets
			}
			if parts <= 0 {
				out.ErrorCode = kerr.InvalidPartitions.Code
				return nil
			}
			repl := int32(t.ReplicationFactor)
			if repl == -1 {
				repl = s.opts.DefaultReplication
			}
			if repl <= 0 {
				out.ErrorCode = kerr.InvalidReplicationFactor.Code
				return nil
			}
			configs := map[string]string{}
			for _, c := range t.Configs {
				if c.Value != nil {
					configs[c.Name] = *c.Value
				}
			}
			desc := topicDescriptor(parts, repl, tableProperties(configs))
			if r.ValidateOnly {
				if _, ok := s.opts.Catalog.TableByPath(cluster.TablePath{Database: db, Table: t.Topic}); ok {
					out.ErrorCode = kerr.TopicAlreadyExists.Code
				}
				return nil
			}
			if err := s.ensureDatabase(ctx); err != nil {
				return err
			}
			return s.opts.Catalog.CreateTable(ctx, cluster.TablePath{Database: db, Table: t.Topic}, desc.JSON(), false)
		}()
		if err != nil {
			out.ErrorCode, out.ErrorMessage = errCode(err), errMessage(err)
		}
		if out.ErrorCode == 0 {
			if info, ok := s.opts.Catalog.TableByPath(cluster.TablePath{Database: db, Table: t.Topic}); ok {
				out.TopicID = topicID(info.ID)
			}
			out.NumPartitions = t.NumPartitions
			// Empty, not null: Kafka's Java AdminClient reads the configs of every created
			// topic (v5+) and fails with a NullPointerException on a null list.
			out.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}

// tableProperties maps the topic configs Strom understands onto table properties:
// retention.ms becomes table.log.ttl; Fluss table.* properties pass through; others are
// ignored, as Kafka ignores none but Strom has no equivalent (docs/kafka.md).
func tableProperties(configs map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range configs {
		switch {
		case k == "retention.ms":
			if v != "-1" {
				out[metadata.PropLogTTL] = v + "ms"
			}
		case len(k) > 6 && k[:6] == "table.":
			out[k] = v
		}
	}
	return out
}

// ensureDatabase creates kafka.database if it does not exist.
func (s *Server) ensureDatabase(ctx context.Context) error {
	return s.opts.Catalog.CreateDatabase(ctx, s.opts.Config.Database, nil, true)
}
