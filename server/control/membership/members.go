// Package membership is tablet-server membership through etcd leases (docs/cluster.md,
// "Membership"): Members, the live tablet servers as a node follows them from the servers/
// prefix, and Registrar, a tablet server's own leased registration.
package membership

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stromdb/strom/server/cluster"
)

// Prefix is the prefix of the registrations, relative to meta.KeyPrefix:
// servers/<tablet-server.id> holds a Registration under the server's lease.
const Prefix = "servers/"

// Registration is what a tablet server publishes under servers/<id> while it lives.
type Registration struct {
	ID        int32              `json:"id"`
	Endpoints []cluster.Endpoint `json:"endpoints"`
	// Internal is HOST:PORT of the internal listener (replication and server-to-server RPCs).
	Internal string `json:"internal"`
	// Rack is the server's tablet-server.rack, "" for none: Place spreads each bucket's
	// replicas over racks when every live server has one.
	Rack string `json:"rack,omitempty"`
	// HTTP is HOST:PORT of the node's HTTP listener (metrics, status, REST), "" without one:
	// where another node's gateway reads this server's replica progress (server/replica_status.go).
	HTTP string `json:"http,omitempty"`
	// FenceGraceMs is the server's tablet-server.fence-check.grace in milliseconds: the
	// longest it keeps acknowledging after its last etcd check that found no fence on it
	// (control's fenceCheck). The active coordinator fences a server that stopped answering
	// its heartbeats only if this is set, and waits past it before revoking the lease; 0 (a
	// server that does not check, or an older binary): its lease alone decides.
	FenceGraceMs int64 `json:"fence_grace_ms,omitempty"`
}

// FencePrefix is the prefix of the fences, relative to meta.KeyPrefix: fences/<id> exists,
// under the fenced server's own registration lease, once the active coordinator decided to
// fail that server over (control's heartbeats). A server that reads it stops acknowledging
// and gives its registration up.
const FencePrefix = "fences/"

// FenceKey is the key of server id's fence (relative to meta.KeyPrefix).
func FenceKey(id int32) string { return FencePrefix + strconv.Itoa(int(id)) }

// Key is the key of server id's registration (relative to meta.KeyPrefix).
func Key(id int32) string { return Prefix + strconv.Itoa(int(id)) }

// ParseKey reads the server id of a registration's key; ok false for another key.
func ParseKey(key string) (int32, bool) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 32)
	return int32(id), err == nil
}

// Decode reads a stored registration.
func Decode(value []byte) (Registration, error) {
	var reg Registration
	if err := json.Unmarshal(value, &reg); err != nil {
		return Registration{}, fmt.Errorf("corrupt server registration: %w", err)
	}
	return reg, nil
}

// Members is the set of live (registered) tablet servers.
type Members struct {
	mu   sync.RWMutex
	live map[int32]Registration
}

// NewMembers returns an empty set.
func NewMembers() *Members { return &Members{live: map[int32]Registration{}} }

// Replace swaps the whole set (a fresh load at one revision), atomically for readers.
func (m *Members) Replace(live map[int32]Registration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live = live
}

// Put records server id's registration.
func (m *Members) Put(id int32, reg Registration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live[id] = reg
}

// Delete records that server id left (its lease expired or was revoked).
func (m *Members) Delete(id int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, id)
}

// IDs returns the ids of the live tablet servers, sorted.
func (m *Members) IDs() []int32 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ids := make([]int32, 0, len(m.live))
	for id := range m.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// IsLive reports whether tablet server id is registered.
func (m *Members) IsLive(id int32) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.live[id]
	return ok
}

// Get returns server id's registration while it is live.
func (m *Members) Get(id int32) (Registration, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.live[id]
	return r, ok
}

// InternalAddr returns HOST:PORT of live server id's internal listener.
func (m *Members) InternalAddr(id int32) (string, bool) {
	r, ok := m.Get(id)
	if !ok || r.Internal == "" {
		return "", false
	}
	return r.Internal, true
}

// HTTPAddr returns HOST:PORT of server id's HTTP listener; ok false when it is not live or
// has none.
func (m *Members) HTTPAddr(id int32) (string, bool) {
	r, ok := m.Get(id)
	if !ok || r.HTTP == "" {
		return "", false
	}
	return r.HTTP, true
}

// Racks returns the rack of every live server that has one (tablet-server.rack).
func (m *Members) Racks() map[int32]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[int32]string, len(m.live))
	for id, r := range m.live {
		if r.Rack != "" {
			out[id] = r.Rack
		}
	}
	return out
}

// Endpoints returns every live server's endpoints, for the listener topology.
func (m *Members) Endpoints() map[int32][]cluster.Endpoint {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[int32][]cluster.Endpoint, len(m.live))
	for id, r := range m.live {
		out[id] = r.Endpoints
	}
	return out
}
