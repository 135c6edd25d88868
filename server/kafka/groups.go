package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stromdb/strom/server/meta"
)

// Consumer groups, Kafka's classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup):
// membership and generations live in the memory of the group's coordinator, a tablet server
// chosen by hashing the group id over the live brokers; committed offsets are records of the
// metadata store (kafka/groups/<group>), so they outlive restarts and failovers. A group whose
// coordinator moves loses its members, who rejoin (as after a Kafka coordinator failover).

// groupStateKey is the metadata store key of a group's committed offsets.
func groupStateKey(group string) string { return groupPrefix + url.PathEscape(group) }

const groupPrefix = "kafka/groups/"

// committed is a group's stored record.
type committed struct {
	ProtocolType string                       `json:"protocol_type,omitempty"`
	Offsets      map[string]map[int32]offsetV `json:"offsets"`
}

type offsetV struct {
	Offset   int64  `json:"offset"`
	Epoch    int32  `json:"leader_epoch"`
	Metadata string `json:"metadata,omitempty"`
}

// Group states, as DescribeGroups and ListGroups name them.
const (
	stEmpty        = "Empty"
	stPreparing    = "PreparingRebalance"
	stCompleting   = "CompletingRebalance"
	stStable       = "Stable"
	stDead         = "Dead"
	tickInterval   = 200 * time.Millisecond
	maxRebalance   = 5 * time.Minute
	minSessionMs   = 1000
	maxSessionMs   = 30 * 60 * 1000
	defaultRebalMs = 60000
)

type member struct {
	id, clientID, host string
	protocolType       string
	protocols          []protocolMeta
	sessionTimeout     time.Duration
	rebalanceTimeout   time.Duration
	lastSeen           time.Time
	assignment         []byte
	joined             bool            // rejoined in the current rebalance
	joinWait           chan joinResult // a blocked JoinGroup
	syncWait           chan syncResult // a blocked SyncGroup
}

type protocolMeta struct {
	name     string
	metadata []byte
}

type joinResult struct {
	err        int16
	generation int32
	protocol   string
	leader     string
	members    []*member // for the leader only
}

type syncResult struct {
	err        int16
	assignment []byte
}

type group struct {
	id           string
	state        string
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	pendingIDs   map[string]bool // ids handed out with MEMBER_ID_REQUIRED
	deadline     time.Time       // of the current rebalance
}

type groupCoordinator struct {
	s      *Server
	mu     sync.Mutex
	groups map[string]*group
	once   sync.Once // starts run
}

func newGroupCoordinator(s *Server) *groupCoordinator {
	return &groupCoordinator{s: s, groups: map[string]*group{}}
}

// run expires members and finishes rebalances until ctx ends.
func (gc *groupCoordinator) run(ctx context.Context) {
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			gc.mu.Lock()
			for _, g := range gc.groups {
				gc.tick(g, now)
			}
			gc.mu.Unlock()
		}
	}
}

// tick expires members whose session ran out and completes a rebalance whose members have all
// rejoined or whose deadline passed. Called with gc.mu held.
func (gc *groupCoordinator) tick(g *group, now time.Time) {
	for id, m := range g.members {
		if m.joinWait == nil && m.syncWait == nil && now.Sub(m.lastSeen) > m.sessionTimeout {
			gc.removeMember(g, id)
		}
	}
	if g.state == stPreparing {
		gc.maybeComplete(g, now)
	}
}

func (gc *groupCoordinator) get(id string, create bool) *group {
	g := gc.groups[id]
	if g == nil && create {
		g = &group{id: id, state: stEmpty, members: map[string]*member{}, pendingIDs: map[string]bool{}}
		gc.groups[id] = g
	}
	return g
}

// member is group id's member memberID, with its group; either is nil when unknown. gc.mu
// must be held.
func (gc *groupCoordinator) member(id, memberID string) (*group, *member) {
	g := gc.groups[id]
	if g == nil {
		return nil, nil
	}
	return g, g.members[memberID]
}

func newMemberID(clientID string) string {
	var b [8]byte
	rand.Read(b[:])
	if clientID == "" {
		clientID = "member"
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

// removeMember drops a member; the group rebalances (or becomes empty).
func (gc *groupCoordinator) removeMember(g *group, id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	delete(g.members, id)
	if m.joinWait != nil {
		m.joinWait <- joinResult{err: kerr.UnknownMemberID.Code}
	}
	if m.syncWait != nil {
		m.syncWait <- syncResult{err: kerr.UnknownMemberID.Code}
	}
	gc.rebalance(g)
}

// rebalance starts a rebalance: every member must rejoin.
func (gc *groupCoordinator) rebalance(g *group) {
	if len(g.members) == 0 {
		g.state, g.leader, g.protocol = stEmpty, "", ""
		g.generation++
		return
	}
	if g.state != stPreparing {
		// Members waiting in SyncGroup learn that they must rejoin.
		for _, m := range g.members {
			if m.syncWait != nil {
				m.syncWait <- syncResult{err: kerr.RebalanceInProgress.Code}
				m.syncWait = nil
			}
			m.joined = false
		}
		g.state = stPreparing
		var d time.Duration
		for _, m := range g.members {
			d = max(d, m.rebalanceTimeout)
		}
		g.deadline = time.Now().Add(min(d, maxRebalance))
	}
}

// maybeComplete finishes a rebalance when every member rejoined, or at the deadline without
// those that did not.
func (gc *groupCoordinator) maybeComplete(g *group, now time.Time) {
	all := true
	for _, m := range g.members {
		all = all && m.joined
	}
	if !all && now.Before(g.deadline) {
		return
	}
	for id, m := range g.members {
		if !m.joined {
			delete(g.members, id)
		}
	}
	if len(g.members) == 0 {
		g.state, g.leader, g.protocol = stEmpty, "", ""
		g.generation++
		return
	}
	g.generation++
	if _, ok := g.members[g.leader]; !ok {
		ids := make([]string, 0, len(g.members))
		for id := range g.members {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		g.leader = ids[0]
	}
	g.protocol = chooseProtocol(g)
	g.state = stCompleting
	var ms []*member
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int {
		if a.id < b.id {
			return -1
		}
		return 1
	})
	for _, m := range g.members {
		m.joined = false
		m.assignment = nil
		m.lastSeen = now
		res := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader}
		if m.id == g.leader {
			res.members = ms
		}
		if m.joinWait != nil {
			m.joinWait <- res
			m.joinWait = nil
		}
	}
}

// chooseProtocol picks the leader's first protocol that every member supports.
func chooseProtocol(g *group) string {
	lead := g.members[g.leader]
	for _, p := range lead.protocols {
		ok := true
		for _, m := range g.members {
			ok = ok && slices.ContainsFunc(m.protocols, func(q protocolMeta) bool { return q.name == p.name })
		}
		if ok {
			return p.name
		}
	}
	return lead.protocols[0].name
}

// coordinatorFor returns the broker that coordinates a group: the group id hashed over the
// live brokers' ids.
func (s *Server) coordinatorFor(c *conn, key string) (int32, bool) {
	brokers := s.opts.Cluster.Brokers(c.listener, c.localHost())
	ids := make([]int32, 0, len(brokers))
	for id := range brokers {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return -1, false
	}
	slices.Sort(ids)
	h := fnv.New32a()
	h.Write([]byte(key))
	return ids[h.Sum32()%uint32(len(ids))], true
}

// isCoordinator reports whether this server coordinates group, or the error to answer.
func (s *Server) isCoordinator(c *conn, group string) int16 {
	if group == "" {
		return kerr.InvalidGroupID.Code
	}
	id, ok := s.coordinatorFor(c, group)
	if !ok {
		return kerr.CoordinatorNotAvailable.Code
	}
	if id != s.opts.NodeID {
		return kerr.NotCoordinator.Code
	}
	return 0
}

// loadCommitted reads a group's record; a missing one is empty.
func (s *Server) loadCommitted(ctx context.Context, group string) (committed, bool, error) {
	var c committed
	b, err := s.opts.Store.Get(ctx, groupStateKey(group))
	if errors.Is(err, meta.ErrNotFound) {
		return committed{Offsets: map[string]map[int32]offsetV{}}, false, nil
	}
	if err != nil {
		return c, false, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, false, err
	}
	if c.Offsets == nil {
		c.Offsets = map[string]map[int32]offsetV{}
	}
	return c, true, nil
}

func (s *Server) storeCommitted(ctx context.Context, group string, c committed) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = s.opts.Store.Txn(ctx, nil, []meta.Op{meta.Put(groupStateKey(group), b)})
	return err
}
