package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/rest"
)

// fakeStatus is a node's view of a 3-server cluster: bucket 0 led by 0 with one follower in
// sync and one not yet heard from, bucket 1's leader unreachable.
type fakeStatus struct{}

func (fakeStatus) BucketReplication(_ context.Context, _, _ int64, n int32) []server.BucketReplication {
	out := make([]server.BucketReplication, n)
	out[0] = server.BucketReplication{Bucket: 0, Leader: 0, LeaderEpoch: 4, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1},
		Followers: []server.FollowerData{{ID: 1, LogEndOffset: 5, Lag: 3, LastCaughtUpMs: 7}, {ID: 2, LogEndOffset: -1, Lag: -1}}}
	out[1] = server.BucketReplication{Bucket: 1, Leader: 2, LeaderEpoch: 1, Replicas: []int32{2, 0, 1}, ISR: []int32{2, 0, 1},
		ProgressError: "server 2 does not answer"}
	return out
}

func (fakeStatus) EtcdMembers(context.Context) ([]server.EtcdMember, error) {
	return []server.EtcdMember{{ID: "a1", Name: "e1", Leader: true}, {ID: "b2", Name: "e2"}}, nil
}

func (fakeStatus) ActiveCoordinator() (bool, string) { return false, "10.0.0.1:9123" }

// The gateway adds its StatusSource's view to the protocol's: ISR, epoch, follower lag
// (null while unknown, in_sync from the ISR), the leader's failure to answer, etcd members.
func TestStatusSourceInAnswers(t *testing.T) {
	n := startNode(t, nil)
	n.createDB(t, "st")
	n.createTable(t, "st", map[string]any{"name": "t", "columns": []any{col("id", "INT")}, "bucket_count": 2})
	g := rest.New(rest.Options{Bootstrap: n.bootstrap, Status: fakeStatus{}})
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	fake := &node{base: srv.URL, client: &http.Client{}}

	r := fake.must(t, 200, call{method: "GET", path: api + "/databases/st/tables/t/buckets"})
	bs := r.body["buckets"].([]any)
	b0, b1 := bs[0].(map[string]any), bs[1].(map[string]any)
	if jsonOf(t, b0["isr"]) != "[0,1]" || b0["leader_epoch"].(float64) != 4 ||
		jsonOf(t, b0["followers"]) != `[{"id":1,"in_sync":true,"lag":3,"last_caught_up_ms":7,"log_end_offset":5},{"id":2,"in_sync":false,"lag":null,"last_caught_up_ms":0,"log_end_offset":null}]` {
		t.Fatalf("bucket 0: %s", jsonOf(t, b0))
	}
	if b0["followers_error"] != nil || b1["followers_error"] != "server 2 does not answer" || jsonOf(t, b1["followers"]) != "[]" {
		t.Fatalf("bucket 1: %s", jsonOf(t, b1))
	}
	r = fake.must(t, 200, call{method: "GET", path: api + "/cluster"})
	if jsonOf(t, r.body["this_node"]) != `{"active_coordinator":false,"active_coordinator_internal_address":"10.0.0.1:9123"}` ||
		len(r.body["etcd_members"].([]any)) != 2 {
		t.Fatalf("cluster: %s", r.raw)
	}
}
