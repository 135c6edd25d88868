package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/tablet"
)

// ReplicaStatusPath is where the HTTP listener answers the replica progress of the buckets
// this node leads: ?table_id=N[&partition_id=M]. The gateway of any node reads it from each
// bucket leader's node (their addresses are in the server registrations) to show follower
// lag, which the Fluss protocol does not carry. Like /metrics it needs no credentials and
// names tables by id only.
const ReplicaStatusPath = "/status/replicas"

// replicaProgressJSON is the wire form of tablet.ReplicaProgress.
type replicaProgressJSON struct {
	Bucket        int32          `json:"bucket"`
	LeaderEpoch   int32          `json:"leader_epoch"`
	ISR           []int32        `json:"isr"`
	LogEndOffset  int64          `json:"log_end_offset"`
	HighWatermark int64          `json:"high_watermark"`
	Followers     []FollowerData `json:"followers"`
}

// FollowerData is one follower of a bucket as its leader sees it.
type FollowerData struct {
	ID int32 `json:"id"`
	// LogEndOffset is the follower's log end, -1 until it fetched in this leadership.
	LogEndOffset int64 `json:"log_end_offset"`
	// Lag is the leader's log end minus the follower's, in records; -1 while unknown.
	Lag int64 `json:"lag"`
	// LastCaughtUpMs is when the follower was last at the leader's log end (epoch ms).
	LastCaughtUpMs int64 `json:"last_caught_up_ms"`
}

func (n *Node) serveReplicaStatus(w http.ResponseWriter, r *http.Request) {
	tableID, err := strconv.ParseInt(r.URL.Query().Get("table_id"), 10, 64)
	if err != nil {
		http.Error(w, "table_id: want a table id", http.StatusBadRequest)
		return
	}
	partitionID := cluster.NoPartition
	if s := r.URL.Query().Get("partition_id"); s != "" {
		if partitionID, err = strconv.ParseInt(s, 10, 64); err != nil {
			http.Error(w, "partition_id: want a partition id", http.StatusBadRequest)
			return
		}
	}
	out := []replicaProgressJSON{}
	if n.tablet != nil {
		for _, p := range n.tablet.LeaderProgress(tableID, partitionID) {
			out = append(out, progressJSON(p))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"server_id": n.cfg.TabletServerID, "buckets": out})
}

func progressJSON(p tablet.ReplicaProgress) replicaProgressJSON {
	j := replicaProgressJSON{Bucket: p.Bucket.Bucket, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR,
		LogEndOffset: p.LogEndOffset, HighWatermark: p.HighWatermark, Followers: []FollowerData{}}
	for _, f := range p.Followers {
		j.Followers = append(j.Followers, FollowerData{ID: f.ID, LogEndOffset: f.LogEndOffset, Lag: f.Lag, LastCaughtUpMs: f.LastCaughtUp.UnixMilli()})
	}
	return j
}

// BucketReplication is the replication state of one bucket: its leader, replica set and
// in-sync replica set as the control plane holds them, and its followers' progress as its
// leader reports it.
type BucketReplication struct {
	Bucket      int32
	Leader      int32 // -1: no leader
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	// Followers is the leader's view of every other replica; nil when the leader could not
	// be asked (ProgressError says why) or the bucket has no other replica.
	Followers     []FollowerData
	ProgressError string
}

// BucketReplication returns the replication state of every bucket of a table (partitionID
// cluster.NoPartition) or partition with numBuckets buckets. On the single node every
// bucket is led by this server alone, its ISR just this server.
func (n *Node) BucketReplication(ctx context.Context, tableID, partitionID int64, numBuckets int32) []BucketReplication {
	out := make([]BucketReplication, numBuckets)
	self := n.cfg.TabletServerID
	if n.control == nil {
		for b := range out {
			out[b] = BucketReplication{Bucket: int32(b), Leader: self, Replicas: []int32{self}, ISR: []int32{self}}
		}
		return out
	}
	states, known := n.control.BucketStates(tableID, partitionID, numBuckets)
	leaders := map[int32]bool{}
	for b := range out {
		out[b] = BucketReplication{Bucket: int32(b), Leader: -1}
		if !known[b] {
			continue
		}
		st := states[b]
		out[b].Leader, out[b].LeaderEpoch = st.Leader, st.LeaderEpoch
		out[b].Replicas, out[b].ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
		if st.Leader >= 0 && len(st.Replicas) > 1 {
			leaders[st.Leader] = true
		}
	}
	// Ask every leader at once; each answers for all the buckets it leads.
	type answer struct {
		byBucket map[int32]replicaProgressJSON
		err      error
	}
	answers := map[int32]answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id := range leaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := n.leaderProgress(ctx, id, tableID, partitionID)
			mu.Lock()
			answers[id] = answer{m, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for b := range out {
		a, ok := answers[out[b].Leader]
		if !ok {
			continue
		}
		if a.err != nil {
			out[b].ProgressError = a.err.Error()
			continue
		}
		p, ok := a.byBucket[int32(b)]
		if !ok || p.LeaderEpoch != out[b].LeaderEpoch {
			out[b].ProgressError = fmt.Sprintf("server %d does not lead the bucket in leader epoch %d (yet)", out[b].Leader, out[b].LeaderEpoch)
			continue
		}
		out[b].Followers = p.Followers
	}
	return out
}

// leaderProgress returns the progress server id reports for the buckets it leads: this
// server's own directly, another's from its HTTP listener.
func (n *Node) leaderProgress(ctx context.Context, id int32, tableID, partitionID int64) (map[int32]replicaProgressJSON, error) {
	out := map[int32]replicaProgressJSON{}
	if id == n.cfg.TabletServerID && n.tablet != nil {
		for _, p := range n.tablet.LeaderProgress(tableID, partitionID) {
			out[p.Bucket.Bucket] = progressJSON(p)
		}
		return out, nil
	}
	addr, ok := n.control.HTTPAddr(id)
	if !ok {
		return nil, fmt.Errorf("server %d has no HTTP listener to ask for its followers' progress", id)
	}
	client, scheme, err := n.peerHTTPClient()
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("%s://%s%s?table_id=%d", scheme, addr, ReplicaStatusPath, tableID)
	if partitionID != cluster.NoPartition {
		url += fmt.Sprintf("&partition_id=%d", partitionID)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask server %d for its followers' progress: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ask server %d for its followers' progress: %s", id, resp.Status)
	}
	var body struct {
		Buckets []replicaProgressJSON `json:"buckets"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("server %d's replica status: %w", id, err)
	}
	for _, p := range body.Buckets {
		out[p.Bucket] = p
	}
	return out, nil
}

// peerHTTPClient returns the client for other nodes' HTTP listeners: plain HTTP, or with
// http.tls HTTPS verified against the system roots and this node's own certificate (the
// nodes of a cluster commonly share a certificate or its CA).
func (n *Node) peerHTTPClient() (*http.Client, string, error) {
	n.peerOnce.Do(func() {
		tr := &http.Transport{DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, MaxIdleConnsPerHost: 2}
		n.peerScheme = "http"
		if n.cfg.HTTP.TLS() {
			roots, err := x509.SystemCertPool()
			if err != nil {
				roots = x509.NewCertPool()
			}
			pem, err := os.ReadFile(n.cfg.HTTP.TLSCertFile)
			if err != nil {
				n.peerErr = fmt.Errorf("http.tls.cert-file: %w", err)
				return
			}
			roots.AppendCertsFromPEM(pem)
			tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			n.peerScheme = "https"
		}
		n.peerClient = &http.Client{Transport: tr}
	})
	return n.peerClient, n.peerScheme, n.peerErr
}

// advertisedHTTP is addr with a wildcard host replaced by the loopback address, as for the
// internal listener (internalAddr): bind http.listen to a routable address on a
// multi-machine cluster.
func advertisedHTTP(addr string) string {
	if addr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// EtcdMember is one member of the etcd cluster that holds the metadata.
type EtcdMember struct {
	ID         string   `json:"id"` // hex, as etcdctl prints it
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peer_urls"`
	ClientURLs []string `json:"client_urls"`
	Leader     bool     `json:"leader"`  // the member leading etcd's Raft group
	Learner    bool     `json:"learner"` // a non-voting member
}

// EtcdMembers lists the members of the metadata store's etcd cluster (the embedded members
// of the nodes, or an external cluster), the Raft leader marked.
func (n *Node) EtcdMembers(ctx context.Context) ([]EtcdMember, error) {
	cli := n.store.Client()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd member list: %w", err)
	}
	leader, err := n.store.RaftLeader(ctx)
	if err != nil {
		n.log.Debug("etcd leader unknown", "err", err)
	}
	out := make([]EtcdMember, 0, len(resp.Members))
	for _, m := range resp.Members {
		out = append(out, EtcdMember{ID: strconv.FormatUint(m.ID, 16), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
			Leader: m.ID == leader, Learner: m.IsLearner})
	}
	slices.SortFunc(out, func(a, b EtcdMember) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ActiveCoordinator reports whether this node is the active coordinator (always, on the
// single node with the coordinator role) and, when another one is, its internal address.
func (n *Node) ActiveCoordinator() (self bool, other string) {
	if n.control == nil {
		return n.coordinator != nil, ""
	}
	if n.control.Active() {
		return true, ""
	}
	addr, _ := n.control.ActiveCoordinatorAddr()
	return false, addr
}
