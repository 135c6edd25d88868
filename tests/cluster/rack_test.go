package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/proto/flusspb"
)

// TestRackReachesMetadataAndPlacement follows tablet-server.rack from a server's options to
// the cluster: a fourth tablet server started with a rack joins a cluster of servers without
// one; GET_METADATA names its rack (and none for the others), and creating a table is then
// refused with INVALID_SERVER_RACK_INFO_EXCEPTION, as Fluss refuses to place replicas over a
// mix of servers with and without racks (docs/cluster.md, "Assignment").
func TestRackReachesMetadataAndPlacement(t *testing.T) {
	c := startCluster(t)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	createTable(t, ctx, conn, "rack_before", logTable())

	set := map[string]string{"tablet-server.rack": "rack-4"}
	for k, v := range faultOptions {
		set[k] = v
	}
	c.AddTabletServer(4, set)

	// Any node answers GET_METADATA; the others learn of server 4 from their etcd watch.
	cc, err := wire.Dial(ctx, c.Nodes[0].CoordinatorAddr, wire.ClientConfig{SoftwareName: "rack-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var resp flusspb.MetadataResponse
		if err := cc.Call(ctx, wire.GetMetadata, &flusspb.MetadataRequest{}, &resp); err != nil {
			t.Fatal(err)
		}
		racks := map[int32]*string{}
		for _, s := range resp.GetTabletServers() {
			racks[s.GetNodeId()] = s.Rack
		}
		if len(racks) == 4 && racks[4] != nil && *racks[4] == "rack-4" && racks[1] == nil && racks[2] == nil && racks[3] == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tablet servers %v: want 4 servers, server 4 in rack-4, the others without a rack", resp.GetTabletServers())
		}
		time.Sleep(100 * time.Millisecond)
	}

	err = conn.Admin().CreateTable(ctx, fluss.TablePath{Database: "fault", Table: "rack_mixed"}, logTable(), false)
	var fe *fluss.Error
	if !errors.As(err, &fe) || fe.Code != fluss.ErrInvalidServerRackInfo {
		t.Fatalf("create table over servers with and without racks: %v, want INVALID_SERVER_RACK_INFO_EXCEPTION", err)
	}
}
