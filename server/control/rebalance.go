package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

// Membership changes (docs/cluster.md, "Membership changes"): server tags and rebalances.
//
// Both live in etcd and are written only by the active coordinator, through its fence:
//
//	servertags   {"<server id>": tag, ...}
//	rebalance    Rebalance: the current (or last) rebalance, its plan and each move's status
//
// Every node reads both from its watch, so a coordinator that takes over knows the tags and
// continues a rebalance in progress: each move's next step is derived from the bucket's
// state in etcd (below), so it does not matter at which step its predecessor stopped.
//
// A move of bucket b from replicas O to N (Kafka's reassignment, as Fluss does it):
//
//  1. Replicas := O ∪ N (BucketEpoch+1). The added replicas start as followers of the
//     current leader, with an empty log, and fetch from the leader's log start; a
//     primary-key follower applies the changelog to its own state as it fetches, after
//     loading the bucket's latest KV snapshot if the changelog no longer starts at 0.
//  2. Once every member of N is in the ISR (the leader adds a follower when it has caught
//     up): Replicas := N, leader := the planned leader (LeaderEpoch+1 if it changes),
//     ISR := ISR ∩ N (BucketEpoch+1). Replicas no longer listed stop and delete their copy.
//
// A move that does not finish within MoveTimeout is rolled back (the added replicas that are
// not in the ISR are removed again) and reported TIMEOUT, as Fluss times out a task.

const (
	serverTagsKey = "servertags"
	rebalanceKey  = "rebalance"
	// maxConcurrentMoves bounds the buckets copied at once (Fluss moves one at a time; a few
	// in parallel keep a rebalance of many small buckets short without flooding a leader).
	maxConcurrentMoves = 4
	defaultMoveTimeout = 2 * time.Minute
	// maxRebalanceRecord keeps the rebalance record under etcd's default request limit
	// (1.5 MiB) with room for the transaction around it.
	maxRebalanceRecord = 1 << 20
)

// Rebalance is a rebalance's record in etcd.
type Rebalance struct {
	ID        string          `json:"id"`
	Status    RebalanceStatus `json:"status"`
	Goals     []Goal          `json:"goals"`
	Moves     []BucketMove    `json:"moves"`
	CreatedMs int64           `json:"created_ms"`
}

func (r *Rebalance) clone() *Rebalance {
	if r == nil {
		return nil
	}
	c := *r
	c.Goals = slices.Clone(r.Goals)
	c.Moves = slices.Clone(r.Moves)
	return &c
}

// applyMembershipKVLocked folds a change of the tags or the rebalance key into the view.
func (c *Control) applyMembershipKVLocked(key string, value []byte, deleted bool) bool {
	switch key {
	case serverTagsKey:
		tags := map[int32]ServerTag{}
		if !deleted {
			var raw map[string]int32
			if err := json.Unmarshal(value, &raw); err != nil {
				c.log.Warn("ignoring corrupt server tags", "err", err)
				return true
			}
			for k, v := range raw {
				if id, err := strconv.ParseInt(k, 10, 32); err == nil {
					tags[int32(id)] = ServerTag(v)
				}
			}
		}
		c.tags = tags
		return true
	case rebalanceKey:
		if deleted {
			c.rebalance = nil
			return true
		}
		var r Rebalance
		if err := json.Unmarshal(value, &r); err != nil {
			c.log.Warn("ignoring a corrupt rebalance record", "err", err)
			return true
		}
		// The active coordinator's own record is newer than (or equal to) what the watch
		// brings back; a record of another id or a later status is a successor's.
		if !c.Active() || c.rebalance == nil {
			c.rebalance = &r
		}
		return true
	}
	return false
}

// loadMembership reads the tags and the rebalance record from etcd when this node takes
// over: its predecessor can no longer write (its fence is gone), so what etcd holds now is
// final, while the watch may still be delivering the last writes.
func (c *Control) loadMembership(ctx context.Context) error {
	resp, err := c.cli.Txn(ctx).Then(clientv3.OpGet(meta.KeyPrefix+serverTagsKey), clientv3.OpGet(meta.KeyPrefix+rebalanceKey)).Commit()
	if err != nil {
		return fmt.Errorf("read the server tags and the rebalance: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebalance = nil
	for i, key := range []string{serverTagsKey, rebalanceKey} {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		if len(kvs) == 0 {
			c.applyMembershipKVLocked(key, nil, true)
			continue
		}
		c.applyMembershipKVLocked(key, kvs[0].Value, false)
	}
	return nil
}

// ServerTags returns the tags of the tablet servers.
func (c *Control) ServerTags() map[int32]ServerTag {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.tags)
}

// knownServer reports whether id is a live tablet server or holds a replica of a bucket.
func (c *Control) knownServerLocked(id int32) bool {
	if _, ok := c.live[id]; ok {
		return true
	}
	for _, e := range c.states {
		if e.state.IsReplica(id) {
			return true
		}
	}
	return false
}

// fencedPut writes key (under meta.KeyPrefix) if this node still holds its fence.
func (c *Control) fencedPut(ctx context.Context, key string, val []byte, del bool) error {
	fence, ok := c.Fence()
	if !ok {
		return meta.ErrNotLeader()
	}
	fenceKey := meta.KeyPrefix + fence.Key
	op := clientv3.OpPut(meta.KeyPrefix+key, string(val))
	if del {
		op = clientv3.OpDelete(meta.KeyPrefix + key)
	}
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(fenceKey), "=", fence.Epoch)).Then(op).Commit()
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if !resp.Succeeded {
		return meta.ErrNotLeader()
	}
	return nil
}

func (c *Control) writeTagsLocked(ctx context.Context, tags map[int32]ServerTag) error {
	if len(tags) == 0 {
		return c.fencedPut(ctx, serverTagsKey, nil, true)
	}
	raw := make(map[string]int32, len(tags))
	for id, t := range tags {
		raw[strconv.Itoa(int(id))] = int32(t)
	}
	val, _ := json.Marshal(raw)
	return c.fencedPut(ctx, serverTagsKey, val, false)
}

// AddServerTag tags servers, all or none (Fluss's ADD_SERVER_TAG). A server must be live or
// hold a replica (Fluss requires live: Strom also accepts a dead server that still holds
// replicas, which is how an operator replaces a server gone for good); else
// SERVER_NOT_EXIST. A server with another tag: SERVER_TAG_ALREADY_EXIST. The same tag again
// changes nothing.
func (c *Control) AddServerTag(ctx context.Context, ids []int32, tag ServerTag) error {
	if !c.Active() {
		return meta.ErrNotLeader()
	}
	c.memberMu.Lock()
	defer c.memberMu.Unlock()
	c.mu.RLock()
	tags := maps.Clone(c.tags)
	if tags == nil {
		tags = map[int32]ServerTag{}
	}
	for _, id := range ids {
		if !c.knownServerLocked(id) {
			c.mu.RUnlock()
			return ferr.New(ferr.ServerNotExistException, "Server %d not exists when trying to add server tag.", id)
		}
		if cur, ok := tags[id]; ok && cur != tag {
			c.mu.RUnlock()
			return ferr.New(ferr.SeverTagAlreadyExistException, "Server tag %s already exists for server %d. However you want to set it to %s, please remove the server tag first.", cur, id, tag)
		}
	}
	c.mu.RUnlock()
	for _, id := range ids {
		tags[id] = tag
	}
	if err := c.writeTagsLocked(ctx, tags); err != nil {
		return err
	}
	c.mu.Lock()
	c.tags = tags
	c.mu.Unlock()
	c.log.Info("server tag added", "servers", ids, "tag", tag)
	return nil
}

// RemoveServerTag removes a tag from servers, all or none (Fluss's REMOVE_SERVER_TAG). A
// server with another tag: SERVER_TAG_NOT_EXIST; a server without a tag, or unknown, is
// skipped, as in Fluss.
func (c *Control) RemoveServerTag(ctx context.Context, ids []int32, tag ServerTag) error {
	if !c.Active() {
		return meta.ErrNotLeader()
	}
	c.memberMu.Lock()
	defer c.memberMu.Unlock()
	c.mu.RLock()
	tags := maps.Clone(c.tags)
	c.mu.RUnlock()
	for _, id := range ids {
		if cur, ok := tags[id]; ok && cur != tag {
			return ferr.New(ferr.SeverTagNotExistException, "Server tag %s not exists for server %d, the current server tag of this server is %s.", tag, id, cur)
		}
	}
	for _, id := range ids {
		delete(tags, id)
	}
	if err := c.writeTagsLocked(ctx, tags); err != nil {
		return err
	}
	c.mu.Lock()
	c.tags = tags
	c.mu.Unlock()
	c.log.Info("server tag removed", "servers", ids, "tag", tag)
	return nil
}

// currentRebalance returns a copy of the rebalance record this node knows.
func (c *Control) currentRebalance() *Rebalance {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rebalance.clone()
}

// StartRebalance plans a rebalance for goals and starts it (Fluss's REBALANCE); it returns
// its id. One rebalance runs at a time: REBALANCE_FAILURE while another is not final, or
// when the plan cannot be made. An empty plan completes at once.
func (c *Control) StartRebalance(ctx context.Context, goals []Goal) (string, error) {
	if !c.Active() {
		return "", meta.ErrNotLeader()
	}
	c.memberMu.Lock()
	defer c.memberMu.Unlock()
	if cur := c.currentRebalance(); cur != nil && !cur.Status.Final() {
		return "", ferr.New(ferr.RebalanceFailureException, "Rebalance task already exists, current rebalance id is '%s'. Please wait for it to finish or cancel it first.", cur.ID)
	}
	moves, err := PlanRebalance(c.snapshotStates(), c.LiveServers(), c.ServerTags(), goals)
	if err != nil {
		return "", err
	}
	var id [16]byte
	rand.Read(id[:])
	r := &Rebalance{ID: hex.EncodeToString(id[:]), Status: StatusNotStarted, Goals: slices.Clone(goals), Moves: moves, CreatedMs: time.Now().UnixMilli()}
	if len(moves) == 0 {
		r.Status = StatusCompleted
	}
	if val, _ := json.Marshal(r); len(val) > maxRebalanceRecord {
		return "", ferr.New(ferr.RebalanceFailureException, "the plan moves %d buckets, too many for one rebalance record (%d bytes, at most %d); tag fewer servers at a time", len(moves), len(val), maxRebalanceRecord)
	}
	if err := c.saveRebalanceLocked(ctx, r); err != nil {
		return "", err
	}
	c.log.Info("rebalance planned", "id", r.ID, "goals", goals, "moves", len(moves))
	c.kickRebalance()
	return r.ID, nil
}

func (c *Control) saveRebalanceLocked(ctx context.Context, r *Rebalance) error {
	val, _ := json.Marshal(r)
	if err := c.fencedPut(ctx, rebalanceKey, val, false); err != nil {
		return err
	}
	c.mu.Lock()
	c.rebalance = r.clone()
	c.mu.Unlock()
	return nil
}

// RebalanceProgress returns the current or last rebalance (Fluss's LIST_REBALANCE_PROGRESS):
// nil when there has been none. An id that is not the current one's:
// NO_REBALANCE_IN_PROGRESS.
func (c *Control) RebalanceProgress(id string) (*Rebalance, error) {
	if !c.Active() {
		return nil, meta.ErrNotLeader()
	}
	r := c.currentRebalance()
	if id != "" && r != nil && r.ID != id {
		return nil, ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to list is not the current rebalance task id %s.", id, r.ID)
	}
	if id != "" && r == nil {
		return nil, ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to list does not exist: there is no rebalance.", id)
	}
	return r, nil
}

// CancelRebalance cancels the current rebalance (Fluss's CANCEL_REBALANCE): moves not yet
// started are CANCELED; a move in progress runs to its end (its replicas are already
// copying). A final rebalance is left as it is. No rebalance, or another id:
// NO_REBALANCE_IN_PROGRESS.
func (c *Control) CancelRebalance(ctx context.Context, id string) error {
	if !c.Active() {
		return meta.ErrNotLeader()
	}
	c.memberMu.Lock()
	defer c.memberMu.Unlock()
	r := c.currentRebalance()
	if r == nil {
		return ferr.New(ferr.NoRebalanceInProgressException, "No rebalance task in progress.")
	}
	if id != "" && r.ID != id {
		return ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to cancel is not the current rebalance task id %s.", id, r.ID)
	}
	if r.Status.Final() {
		return nil
	}
	running := false
	for i := range r.Moves {
		switch r.Moves[i].Status {
		case StatusNotStarted:
			r.Moves[i].Status = StatusCanceled
		case StatusRebalancing:
			running = true
		}
	}
	if !running {
		r.Status = StatusCanceled
	}
	// While a started move finishes, the rebalance stays REBALANCING; it ends CANCELED.
	if err := c.saveRebalanceLocked(ctx, r); err != nil {
		return err
	}
	c.log.Info("rebalance canceled", "id", r.ID, "moves_running", running)
	return nil
}

func (c *Control) kickRebalance() {
	select {
	case c.rebalanceKick <- struct{}{}:
	default:
	}
}

// rebalanceLoop advances the current rebalance while this node is the active coordinator:
// at every kick (a plan, a bucket state change) and every 200 ms.
func (c *Control) rebalanceLoop() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.rebalanceKick:
		case <-t.C:
		}
		if !c.Active() {
			c.moveStarted = nil
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		if err := c.stepRebalance(ctx); err != nil && ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
			c.log.Warn("rebalance step failed", "err", err)
		}
		cancel()
	}
}

// stepRebalance advances every started move by what the bucket states allow, starts moves
// while fewer than maxConcurrentMoves run, and ends the rebalance when no move is left. It
// persists the record when a status changed.
func (c *Control) stepRebalance(ctx context.Context) error {
	c.memberMu.Lock()
	defer c.memberMu.Unlock()
	r := c.currentRebalance()
	if r == nil || r.Status.Final() {
		return nil
	}
	if c.moveStarted == nil {
		c.moveStarted = map[cluster.Bucket]time.Time{}
	}
	changed := false
	running := 0
	for i := range r.Moves {
		m := &r.Moves[i]
		if m.Status != StatusRebalancing {
			continue
		}
		before := m.Status
		if err := c.advanceMove(ctx, m); err != nil {
			return err
		}
		if m.Status != before {
			changed = true
			delete(c.moveStarted, m.Bucket)
		} else {
			running++
		}
	}
	canceled := false
	for i := range r.Moves {
		if r.Moves[i].Status == StatusCanceled {
			canceled = true
		}
	}
	for i := range r.Moves {
		m := &r.Moves[i]
		if running >= maxConcurrentMoves || canceled {
			break
		}
		if m.Status != StatusNotStarted {
			continue
		}
		first, held := c.moveStarted[m.Bucket]
		if !held {
			first = time.Now()
			c.moveStarted[m.Bucket] = first
		}
		reason, final := c.moveBlocked(m)
		if reason != "" && !final && time.Since(first) <= c.moveTimeout() {
			// Held (no live leader yet, the leader did not answer): tried again at the
			// next step, within the move's timeout.
			c.log.Debug("rebalance move held", "bucket", m.Bucket, "reason", reason)
			continue
		}
		changed = true
		if reason != "" {
			m.Status, m.Reason = StatusFailed, reason
			if !final {
				m.Status = StatusTimeout
			}
			c.log.Warn("rebalance move refused", "bucket", m.Bucket, "status", m.Status, "reason", reason)
			delete(c.moveStarted, m.Bucket)
			continue
		}
		m.Status = StatusRebalancing
		c.moveStarted[m.Bucket] = time.Now()
		running++
		if err := c.advanceMove(ctx, m); err != nil {
			return err
		}
	}
	if running == 0 {
		pending := false
		failed := false
		for _, m := range r.Moves {
			switch m.Status {
			case StatusNotStarted, StatusRebalancing:
				pending = true
			case StatusFailed, StatusTimeout:
				failed = true
			}
		}
		if !pending {
			switch {
			case canceled:
				r.Status = StatusCanceled
			case failed:
				r.Status = StatusFailed
			default:
				r.Status = StatusCompleted
			}
			changed = true
			c.log.Info("rebalance finished", "id", r.ID, "status", r.Status)
		}
	}
	if r.Status == StatusNotStarted {
		r.Status = StatusRebalancing
		changed = true
	}
	if !changed {
		return nil
	}
	return c.saveRebalanceLocked(ctx, r)
}

// moveBlocked says why a move cannot start, or "" when it can. final reports a refusal (the
// bucket is gone); otherwise the move is held and tried again (no live leader yet). A new
// replica of a primary-key bucket whose leader's changelog no longer starts at offset 0 needs
// no check here: retention never trims a changelog past the bucket's kept KV snapshots, so
// such a bucket always has one, and the new replica bootstraps from it before it fetches
// (docs/cluster.md, "Snapshot bootstrap").
func (c *Control) moveBlocked(m *BucketMove) (reason string, final bool) {
	st, ok := c.State(m.Bucket)
	if !ok {
		return "the bucket no longer exists", true
	}
	if st.Leader == cluster.NoLeader || !c.IsLive(st.Leader) {
		return "the bucket has no live leader to copy from", false
	}
	return "", false
}

func (c *Control) moveTimeout() time.Duration {
	if c.opts.MoveTimeout == 0 {
		return defaultMoveTimeout
	}
	return c.opts.MoveTimeout
}

// advanceMove takes the next step of a started move from the bucket's current state (see
// the top of this file), or finishes it.
func (c *Control) advanceMove(ctx context.Context, m *BucketMove) error {
	c.mu.RLock()
	e, ok := c.states[m.Bucket]
	c.mu.RUnlock()
	if !ok {
		m.Status, m.Reason = StatusFailed, "the bucket no longer exists"
		return nil
	}
	st := e.state
	if e.rev == 0 {
		return nil // written by us, not yet seen by the watch: decide on the next step
	}
	started, ok := c.moveStarted[m.Bucket]
	if !ok {
		started = time.Now() // continued after a takeover: its time starts again
		c.moveStarted[m.Bucket] = started
	}
	timeout := c.moveTimeout()
	if sameMembers(st.Replicas, m.NewReplicas) {
		if st.Leader == m.NewLeader || !c.IsLive(m.NewLeader) || !st.InISR(m.NewLeader) {
			// Done; a planned leader that died meanwhile left the leadership to the
			// election rules.
			m.Status = StatusCompleted
			return nil
		}
		next := st
		next.Replicas = slices.Clone(m.NewReplicas)
		next.ISR = slices.Clone(st.ISR)
		next.Leader = m.NewLeader
		next.LeaderEpoch++
		next.BucketEpoch++
		return c.writeMoveState(ctx, m.Bucket, e.rev, next)
	}
	if time.Since(started) > timeout {
		return c.rollBackMove(ctx, m, e)
	}
	if st.Leader == cluster.NoLeader || !c.IsLive(st.Leader) {
		return nil // the election rules run first; the move goes on under the new leader
	}
	var added []int32
	for _, id := range m.NewReplicas {
		if !st.IsReplica(id) {
			added = append(added, id)
		}
	}
	if len(added) > 0 {
		next := st
		next.Replicas = append(slices.Clone(st.Replicas), added...)
		next.ISR = slices.Clone(st.ISR)
		next.BucketEpoch++
		c.log.Info("rebalance: adding replicas", "bucket", m.Bucket, "added", added, "replicas", next.Replicas)
		return c.writeMoveState(ctx, m.Bucket, e.rev, next)
	}
	for _, id := range m.NewReplicas {
		if !st.InISR(id) {
			return nil // still catching up
		}
	}
	next := st
	next.Replicas = slices.Clone(m.NewReplicas)
	next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return !slices.Contains(m.NewReplicas, id) })
	leader := m.NewLeader
	if !c.IsLive(leader) {
		leader = cluster.NoLeader
		for _, id := range m.NewReplicas {
			if c.IsLive(id) && st.InISR(id) {
				leader = id
				break
			}
		}
	}
	if leader == cluster.NoLeader {
		return nil
	}
	if leader != st.Leader {
		next.Leader = leader
		next.LeaderEpoch++
	}
	next.BucketEpoch++
	c.log.Info("rebalance: switching to the new replicas", "bucket", m.Bucket, "replicas", next.Replicas, "leader", next.Leader, "isr", next.ISR)
	return c.writeMoveState(ctx, m.Bucket, e.rev, next)
}

// rollBackMove removes the replicas a timed-out move added and that have not joined the
// ISR, and marks it TIMEOUT.
func (c *Control) rollBackMove(ctx context.Context, m *BucketMove, e stateEntry) error {
	st := e.state
	next := st
	next.Replicas = slices.DeleteFunc(slices.Clone(st.Replicas), func(id int32) bool {
		return !slices.Contains(m.OriginalReplicas, id) && !st.InISR(id)
	})
	m.Status, m.Reason = StatusTimeout, "the new replicas did not catch up in time"
	c.log.Warn("rebalance move timed out", "bucket", m.Bucket, "replicas", st.Replicas, "isr", st.ISR)
	if len(next.Replicas) == len(st.Replicas) {
		return nil
	}
	next.ISR = slices.Clone(st.ISR)
	next.BucketEpoch++
	return c.writeMoveState(ctx, m.Bucket, e.rev, next)
}

// writeMoveState writes a move's next state (a compare-and-swap under the fence, serialised
// with leader elections) and tells the replicas, including those it removes. A state that
// moved on meanwhile is decided again at the next step.
func (c *Control) writeMoveState(ctx context.Context, b cluster.Bucket, rev int64, next cluster.BucketState) error {
	c.reconcileMu.Lock()
	defer c.reconcileMu.Unlock()
	next.CoordinatorEpoch = c.Epoch()
	newRev, err := c.casState(ctx, b, rev, next)
	if err != nil || newRev == 0 {
		return err
	}
	c.noteState(b, next, newRev)
	// Removed replicas learn from the watch, or from a notification listing the new state
	// sent to them too (it does not name them, so they drop their copy).
	c.notifyMove(ctx, b, next)
	return nil
}

// notifyMove tells the replicas of next its state. Replicas of prev that next no longer
// lists learn it from their watch (applyMine passes a state that stops listing a server to
// that server, which drops its copy).
func (c *Control) notifyMove(ctx context.Context, b cluster.Bucket, next cluster.BucketState) {
	c.notify(ctx, map[cluster.Bucket]cluster.BucketState{b: next}, nil, nil)
}
