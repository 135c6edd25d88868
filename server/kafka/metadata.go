package kafka

import (
	"context"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stromdb/strom/server/auth"
	"github.com/stromdb/strom/server/cluster"
)

// Metadata (3): v0-v12. Brokers are the tablet servers' Kafka endpoints on the listener the
// request arrived on; a partition's leader, replicas and ISR are its bucket's.
func init() { register(3, 0, 12, handleMetadata) }

const clusterID = "strom"

func handleMetadata(_ context.Context, s *Server, req *request) (kmsg.Response, error) {
	r := req.msg.(*kmsg.MetadataRequest)
	resp := kmsg.NewPtrMetadataResponse()
	brokers := s.opts.Cluster.Brokers(req.conn.listener, req.conn.localHost())
	ids := make([]int32, 0, len(brokers))
	for id := range brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := brokers[id]
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: id, Host: e.Host, Port: e.Port})
	}
	cid := clusterID
	resp.ClusterID = &cid
	resp.ControllerID = s.opts.Cluster.Controller()
	var tables []*cluster.TableInfo
	var missing []kmsg.MetadataResponseTopic
	if r.Topics == nil {
		tables = s.topics()
	} else {
		for _, t := range r.Topics {
			var info *cluster.TableInfo
			var ok bool
			if t.Topic != nil {
				info, ok = s.topic(*t.Topic)
			} else if tid, isOurs := tableOfTopicID(t.TopicID); isOurs {
				if info, ok = s.opts.Catalog.TableByID(tid); ok && (info.Path.Database != s.opts.Config.Database || !isTopicTable(info)) {
					ok = false
				}
			}
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.TopicID, mt.ErrorCode = t.Topic, t.TopicID, kerr.UnknownTopicOrPartition.Code
				missing = append(missing, mt)
				continue
			}
			tables = append(tables, info)
		}
	}
	for _, t := range tables {
		if !req.conn.allowed(auth.OpDescribe, auth.TableResource(t.Path.Database, t.Path.Table)) {
			if r.Topics != nil {
				name := t.Path.Table
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode = &name, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
			}
			continue
		}
		resp.Topics = append(resp.Topics, s.topicMetadata(t))
	}
	resp.Topics = append(resp.Topics, missing...)
	return resp, nil
}

func (s *Server) topicMetadata(t *cluster.TableInfo) kmsg.MetadataResponseTopic {
	name := t.Path.Table
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = &name, topicID(t.ID)
	states, known := s.opts.Cluster.Buckets(t)
	for i := range states {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = int32(i)
		st := states[i]
		if !known[i] || st.Leader == cluster.NoLeader {
			p.ErrorCode, p.Leader = kerr.LeaderNotAvailable.Code, -1
		} else {
			p.Leader, p.LeaderEpoch = st.Leader, st.LeaderEpoch
		}
		p.Replicas, p.ISR = st.Replicas, st.ISR
		if p.Replicas == nil {
			p.Replicas = []int32{}
		}
		if p.ISR == nil {
			p.ISR = []int32{}
		}
		mt.Partitions = append(mt.Partitions, p)
	}
	return mt
}

// localHost is the address the client reached this server at (for wildcard listeners).
func (c *conn) localHost() string {
	host, _, _ := net.SplitHostPort(c.nc.LocalAddr().String())
	return host
}
