package cluster

import (
	"net"
	"slices"
	"testing"
)

func TestTopologyResolvesPerListener(t *testing.T) {
	topo := NewTopology()
	if _, ok, tablets := topo.Resolve("FLUSS", "h"); ok || len(tablets) != 0 {
		t.Fatal("an empty topology resolves something")
	}
	topo.SetCoordinator(Endpoint{Listener: "FLUSS", Host: "0.0.0.0", Port: 9123})
	topo.SetCoordinator(Endpoint{Listener: "CLIENT", Host: "c.example", Port: 9223})
	topo.SetTabletServer(1, Endpoint{Listener: "FLUSS", Host: "", Port: 9124})
	topo.SetTabletServer(1, Endpoint{Listener: "CLIENT", Host: "t1.example", Port: 9224})
	topo.SetTabletServer(2, Endpoint{Listener: "FLUSS", Host: "::", Port: 9125})

	coord, ok, tablets := topo.Resolve("FLUSS", "10.0.0.5")
	if !ok || coord.Host != "10.0.0.5" || coord.Port != 9123 {
		t.Fatalf("coordinator on FLUSS: %+v %v: a wildcard host is the address the client reached", coord, ok)
	}
	if len(tablets) != 2 || tablets[1].Host != "10.0.0.5" || tablets[2].Host != "10.0.0.5" || tablets[2].Port != 9125 {
		t.Fatalf("tablet servers on FLUSS: %+v", tablets)
	}
	coord, ok, tablets = topo.Resolve("CLIENT", "10.0.0.5")
	if !ok || coord.Host != "c.example" || len(tablets) != 1 || tablets[1].Host != "t1.example" {
		t.Fatalf("on CLIENT: %+v %v %+v: a named host is kept, a server without the listener left out", coord, ok, tablets)
	}
	if _, ok, _ := topo.Resolve("OTHER", "h"); ok {
		t.Fatal("a listener nobody has resolved a coordinator")
	}
	if e, ok := topo.CoordinatorEndpoint("CLIENT"); !ok || e.Port != 9223 {
		t.Fatalf("CoordinatorEndpoint = %+v %v", e, ok)
	}
	ids := topo.TabletServerIDs()
	slices.Sort(ids)
	if !slices.Equal(ids, []int32{1, 2}) {
		t.Fatalf("TabletServerIDs = %v", ids)
	}
}

// TestTopologyRemembersDepartedServers checks the rule of docs/cluster.md ("Clients and a
// killed server"): a server that leaves the live set keeps its last endpoints as departed
// until it registers again.
func TestTopologyRemembersDepartedServers(t *testing.T) {
	topo := NewTopology()
	topo.ReplaceTabletServers(map[int32][]Endpoint{
		1: {{Listener: "FLUSS", Host: "0.0.0.0", Port: 1}},
		2: {{Listener: "FLUSS", Host: "h2", Port: 2}, {Listener: "CLIENT", Host: "h2", Port: 22}},
	})
	if _, ok := topo.DepartedTabletServer("FLUSS", "l", 1); ok {
		t.Fatal("a live server is departed")
	}
	topo.ReplaceTabletServers(map[int32][]Endpoint{2: {{Listener: "FLUSS", Host: "h2", Port: 2}}})
	e, ok := topo.DepartedTabletServer("FLUSS", "local", 1)
	if !ok || e.Host != "local" || e.Port != 1 {
		t.Fatalf("the departed server 1: %+v %v", e, ok)
	}
	if _, ok := topo.DepartedTabletServer("CLIENT", "local", 1); ok {
		t.Fatal("departed on a listener it never had")
	}
	if _, _, tablets := topo.Resolve("FLUSS", "local"); len(tablets) != 1 {
		t.Fatalf("a departed server is resolved as live: %v", tablets)
	}
	topo.ReplaceTabletServers(map[int32][]Endpoint{1: {{Listener: "FLUSS", Host: "h1", Port: 1}}, 2: {{Listener: "FLUSS", Host: "h2", Port: 2}}})
	if _, ok := topo.DepartedTabletServer("FLUSS", "local", 1); ok {
		t.Fatal("a server that registered again is still departed")
	}
	topo.ReplaceCoordinator([]Endpoint{{Listener: "FLUSS", Host: "c", Port: 9}})
	if e, ok := topo.CoordinatorEndpoint("FLUSS"); !ok || e.Host != "c" {
		t.Fatalf("coordinator %+v %v", e, ok)
	}
	topo.ReplaceCoordinator(nil)
	if _, ok := topo.CoordinatorEndpoint("FLUSS"); ok {
		t.Fatal("a coordinator while none is elected")
	}
}

func TestEndpointFromAddr(t *testing.T) {
	e := EndpointFromAddr("FLUSS", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9123})
	if e != (Endpoint{Listener: "FLUSS", Host: "127.0.0.1", Port: 9123}) {
		t.Fatalf("%+v", e)
	}
	e = EndpointFromAddr("X", &net.TCPAddr{IP: net.ParseIP("::1"), Port: 7})
	if e.Host != "::1" || e.Port != 7 {
		t.Fatalf("%+v", e)
	}
}
