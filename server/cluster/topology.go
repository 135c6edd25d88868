package cluster

import (
	"net"
	"strconv"
	"sync"
)

// Endpoint is an address a role is reachable at on one listener.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// Node ids reported in metadata. The coordinator is always 0; tablet server ids are configured.
const CoordinatorNodeID = 0

// Topology records where each role listens, per listener name, so that metadata answers
// give clients the addresses of the listener their request arrived on.
type Topology struct {
	mu            sync.RWMutex
	coordinator   map[string]Endpoint
	tabletServers map[int32]map[string]Endpoint
	// departed holds the last endpoints of tablet servers that left the live set, until
	// they register again: metadata names a departed server as long as a bucket still names
	// it as its leader (see DepartedTabletServer).
	departed map[int32]map[string]Endpoint
	// racks holds the tablet-server.rack of the tablet servers that have one (topology_racks.go).
	racks map[int32]string
}

// NewTopology returns an empty topology.
func NewTopology() *Topology {
	return &Topology{
		coordinator:   map[string]Endpoint{},
		tabletServers: map[int32]map[string]Endpoint{},
		departed:      map[int32]map[string]Endpoint{},
		racks:         map[int32]string{},
	}
}

// SetCoordinator records the coordinator's endpoint on a listener.
func (t *Topology) SetCoordinator(e Endpoint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.coordinator[e.Listener] = e
}

// SetTabletServer records a tablet server's endpoint on a listener.
func (t *Topology) SetTabletServer(id int32, e Endpoint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tabletServers[id] == nil {
		t.tabletServers[id] = map[string]Endpoint{}
	}
	t.tabletServers[id][e.Listener] = e
}

// TabletServerIDs returns the ids of the known tablet servers.
func (t *Topology) TabletServerIDs() []int32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ids := make([]int32, 0, len(t.tabletServers))
	for id := range t.tabletServers {
		ids = append(ids, id)
	}
	return ids
}

// Resolve returns the coordinator endpoint and tablet server endpoints (by id) on listener.
// A wildcard bind host (0.0.0.0, ::) is replaced by localHost, the address the client
// reached us at.
func (t *Topology) Resolve(listener, localHost string) (coord Endpoint, okCoord bool, tablets map[int32]Endpoint) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	coord, okCoord = t.coordinator[listener]
	coord = reachableAt(coord, localHost)
	tablets = make(map[int32]Endpoint, len(t.tabletServers))
	for id, eps := range t.tabletServers {
		if e, ok := eps[listener]; ok {
			tablets[id] = reachableAt(e, localHost)
		}
	}
	return coord, okCoord, tablets
}

// reachableAt replaces a wildcard (or empty) host of e by localHost.
func reachableAt(e Endpoint, localHost string) Endpoint {
	if ip := net.ParseIP(e.Host); e.Host == "" || (ip != nil && ip.IsUnspecified()) {
		e.Host = localHost
	}
	return e
}

// EndpointFromAddr builds an endpoint from a bound listener address.
func EndpointFromAddr(listener string, addr net.Addr) Endpoint {
	host, port, _ := net.SplitHostPort(addr.String())
	p, _ := strconv.Atoi(port)
	return Endpoint{Listener: listener, Host: host, Port: int32(p)}
}

// ReplaceCoordinator replaces the coordinator's endpoints: in a cluster, those of the active
// coordinator (none while no coordinator is elected).
func (t *Topology) ReplaceCoordinator(eps []Endpoint) {
	m := make(map[string]Endpoint, len(eps))
	for _, e := range eps {
		m[e.Listener] = e
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.coordinator = m
}

// ReplaceTabletServers replaces the set of tablet servers: in a cluster, the live ones.
func (t *Topology) ReplaceTabletServers(servers map[int32][]Endpoint) {
	m := make(map[int32]map[string]Endpoint, len(servers))
	for id, eps := range servers {
		m[id] = make(map[string]Endpoint, len(eps))
		for _, e := range eps {
			m[id][e.Listener] = e
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, eps := range t.tabletServers {
		if _, live := m[id]; !live {
			t.departed[id] = eps
		}
	}
	for id := range m {
		delete(t.departed, id)
	}
	t.tabletServers = m
}

// DepartedTabletServer returns the last endpoint on listener of a tablet server that has left
// the live set (and not registered again since), with a wildcard host replaced as by Resolve.
//
// A server killed without a controlled shutdown leaves the live set when its lease expires,
// a moment before the coordinator moves its leaderships; bucket states read in between still
// name it as leader. Metadata answers list such a server with its last endpoint rather than
// name a leader absent from their server list: a client that finds the leader unreachable
// asks again and so learns the new leader, whereas the Rust client (pyfluss) keeps a cached
// leader for a bucket whose answered leader is not among the listed servers and never asks
// again (docs/cluster.md, "Clients and a killed server").
func (t *Topology) DepartedTabletServer(listener, localHost string, id int32) (Endpoint, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.departed[id][listener]
	if !ok {
		return Endpoint{}, false
	}
	return reachableAt(e, localHost), true
}

// CoordinatorEndpoint returns the coordinator's endpoint on listener.
func (t *Topology) CoordinatorEndpoint(listener string) (Endpoint, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.coordinator[listener]
	return e, ok
}
