package cluster

// SetRack records tablet server id's rack (tablet-server.rack); "" forgets it.
func (t *Topology) SetRack(id int32, rack string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rack == "" {
		delete(t.racks, id)
		return
	}
	t.racks[id] = rack
}

// ReplaceRacks replaces the racks of the live tablet servers (in a cluster, from their
// registrations). A departed server keeps its last rack while metadata still names it
// (DepartedTabletServer), so its server node does not change while it is listed.
func (t *Topology) ReplaceRacks(racks map[int32]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[int32]string, len(racks))
	for id, r := range racks {
		if r != "" {
			m[id] = r
		}
	}
	for id := range t.departed {
		if r, ok := t.racks[id]; ok {
			if _, live := m[id]; !live {
				m[id] = r
			}
		}
	}
	t.racks = m
}

// Rack returns tablet server id's rack, "" for none: GET_METADATA's PbServerNode.rack.
func (t *Topology) Rack(id int32) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.racks[id]
}
