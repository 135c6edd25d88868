package cluster

import "testing"

// Racks follow the live set; a departed server keeps its last rack while it is departed, and
// one that registers again without a rack has none.
func TestTopologyRacks(t *testing.T) {
	topo := NewTopology()
	ep := func(p int32) []Endpoint { return []Endpoint{{Listener: "FLUSS", Host: "h", Port: p}} }
	topo.ReplaceTabletServers(map[int32][]Endpoint{1: ep(1), 2: ep(2)})
	topo.ReplaceRacks(map[int32]string{1: "a", 2: "b"})
	if topo.Rack(1) != "a" || topo.Rack(2) != "b" || topo.Rack(3) != "" {
		t.Fatalf("racks %q %q %q", topo.Rack(1), topo.Rack(2), topo.Rack(3))
	}
	topo.ReplaceTabletServers(map[int32][]Endpoint{2: ep(2)})
	topo.ReplaceRacks(map[int32]string{2: "b"})
	if topo.Rack(1) != "a" {
		t.Fatalf("the departed server 1 lost its rack: %q", topo.Rack(1))
	}
	topo.ReplaceTabletServers(map[int32][]Endpoint{1: ep(1), 2: ep(2)})
	topo.ReplaceRacks(map[int32]string{2: "b"})
	if topo.Rack(1) != "" {
		t.Fatalf("server 1 registered again without a rack keeps %q", topo.Rack(1))
	}
	topo.SetRack(5, "z")
	topo.SetRack(2, "")
	if topo.Rack(5) != "z" || topo.Rack(2) != "" {
		t.Fatalf("SetRack: %q %q", topo.Rack(5), topo.Rack(2))
	}
}
