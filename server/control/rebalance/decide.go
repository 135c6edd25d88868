package rebalance

import (
	"maps"
	"slices"
	"time"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
)

// PlacementServers are the servers of live that may receive replicas of a new table or
// partition: all but those tagged PERMANENT_OFFLINE (Fluss's getLiveServers).
func PlacementServers(live []int32, tags map[int32]ServerTag) []int32 {
	return slices.DeleteFunc(slices.Clone(live), func(id int32) bool {
		t, tagged := tags[id]
		return tagged && t == TagPermanentOffline
	})
}

// AddTags is the tags after tagging ids with tag, all or none (Fluss's ADD_SERVER_TAG). A
// server must be known — live or holding a replica (Fluss requires live: Strom also accepts
// a dead server that still holds replicas, which is how an operator replaces a server gone
// for good) — else SERVER_NOT_EXIST. A server with another tag: SERVER_TAG_ALREADY_EXIST. The
// same tag again changes nothing. tags is not modified.
func AddTags(tags map[int32]ServerTag, ids []int32, tag ServerTag, known func(int32) bool) (map[int32]ServerTag, error) {
	for _, id := range ids {
		if !known(id) {
			return nil, ferr.New(ferr.ServerNotExistException, "Server %d not exists when trying to add server tag.", id)
		}
		if cur, ok := tags[id]; ok && cur != tag {
			return nil, ferr.New(ferr.SeverTagAlreadyExistException, "Server tag %s already exists for server %d. However you want to set it to %s, please remove the server tag first.", cur, id, tag)
		}
	}
	out := maps.Clone(tags)
	if out == nil {
		out = map[int32]ServerTag{}
	}
	for _, id := range ids {
		out[id] = tag
	}
	return out, nil
}

// RemoveTags is the tags after removing tag from ids, all or none (Fluss's
// REMOVE_SERVER_TAG). A server with another tag: SERVER_TAG_NOT_EXIST; a server without a
// tag, or unknown, is skipped, as in Fluss. tags is not modified.
func RemoveTags(tags map[int32]ServerTag, ids []int32, tag ServerTag) (map[int32]ServerTag, error) {
	for _, id := range ids {
		if cur, ok := tags[id]; ok && cur != tag {
			return nil, ferr.New(ferr.SeverTagNotExistException, "Server tag %s not exists for server %d, the current server tag of this server is %s.", tag, id, cur)
		}
	}
	out := maps.Clone(tags)
	for _, id := range ids {
		delete(out, id)
	}
	return out, nil
}

// Cancel marks every move of r not yet started CANCELED (Fluss's CANCEL_REBALANCE); a move
// in progress runs to its end, since its new replicas exist already. The rebalance is
// CANCELED when no move is running, else it stays REBALANCING and ends CANCELED later
// (Outcome). It reports whether a move is running. A final r is left as it is.
func Cancel(r *Record) (running bool) {
	if r.Status.Final() {
		return false
	}
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
	return running
}

// Outcome is the status a rebalance ends with once no move is running, and whether it has
// ended: not while a move is NOT_STARTED or REBALANCING; then CANCELED if a move was
// canceled, FAILED if one failed or timed out (a choice: Fluss reports COMPLETED), else
// COMPLETED.
func Outcome(moves []Move) (Status, bool) {
	canceled, failed := false, false
	for _, m := range moves {
		switch m.Status {
		case StatusNotStarted, StatusRebalancing:
			return StatusRebalancing, false
		case StatusCanceled:
			canceled = true
		case StatusFailed, StatusTimeout:
			failed = true
		}
	}
	switch {
	case canceled:
		return StatusCanceled, true
	case failed:
		return StatusFailed, true
	}
	return StatusCompleted, true
}

// Admission is what Admit decides for a move that has not started.
type Admission int

const (
	// Start: the move starts now.
	Start Admission = iota
	// Hold: the move waits (no live leader yet) and is tried again at the next step.
	Hold
	// Refuse: the move ends with the status and reason Admit returns, having changed nothing.
	Refuse
)

// Admit decides whether a move not yet started may start, given its bucket's state (ok false:
// the bucket is gone) and how long it has been held. A bucket that is gone refuses it
// (FAILED); a bucket without a live leader (nothing to copy from) holds it, up to timeout,
// then refuses it (TIMEOUT). A new replica of a primary-key bucket whose leader's changelog
// no longer starts at offset 0 needs no check here: retention never trims a changelog past
// the bucket's kept KV snapshots, so such a bucket always has one, and the new replica
// bootstraps from it before it fetches (docs/cluster.md, "Snapshot bootstrap").
func Admit(st cluster.BucketState, ok bool, live func(int32) bool, heldFor, timeout time.Duration) (Admission, Status, string) {
	if !ok {
		return Refuse, StatusFailed, "the bucket no longer exists"
	}
	if st.Leader == cluster.NoLeader || !live(st.Leader) {
		const reason = "the bucket has no live leader to copy from"
		if heldFor <= timeout {
			return Hold, StatusNotStarted, reason
		}
		return Refuse, StatusTimeout, reason
	}
	return Start, StatusRebalancing, ""
}

// StepKind names what Step decided.
type StepKind int

const (
	// Wait: nothing to write now (catching up, or no live leader: the election rules run
	// first and the move goes on under the new leader).
	Wait StepKind = iota
	// AddReplicas: step 1, Replicas := O ∪ N.
	AddReplicas
	// Switch: step 2, Replicas := N with the planned leader.
	Switch
	// SwitchLeader: the replicas are N already; only the leadership moves.
	SwitchLeader
	// RollBack: the move timed out; the replicas it added and not in the ISR go.
	RollBack
	// Done: the move is over (Status says how); nothing to write.
	Done
)

// StepResult is Step's decision: the move's status after it, and the state to write (when
// Write is set).
type StepResult struct {
	Kind   StepKind
	Status Status
	Reason string
	Write  bool
	Next   cluster.BucketState
}

// Step decides a started move's next step from its bucket's current state st (see the
// package comment), given which servers are live and whether the move has run out its
// timeout. The state to write keeps st's CoordinatorEpoch; the writer sets its own.
func Step(m Move, st cluster.BucketState, live func(int32) bool, timedOut bool) StepResult {
	running := StepResult{Kind: Wait, Status: StatusRebalancing}
	if SameMembers(st.Replicas, m.NewReplicas) {
		if st.Leader == m.NewLeader || !live(m.NewLeader) || !st.InISR(m.NewLeader) {
			// Done; a planned leader that died meanwhile left the leadership to the
			// election rules.
			return StepResult{Kind: Done, Status: StatusCompleted}
		}
		next := st
		next.Replicas = slices.Clone(m.NewReplicas)
		next.ISR = slices.Clone(st.ISR)
		next.Leader = m.NewLeader
		next.LeaderEpoch++
		next.BucketEpoch++
		return StepResult{Kind: SwitchLeader, Status: StatusRebalancing, Write: true, Next: next}
	}
	if timedOut {
		res := StepResult{Kind: RollBack, Status: StatusTimeout, Reason: "the new replicas did not catch up in time"}
		next := st
		next.Replicas = slices.DeleteFunc(slices.Clone(st.Replicas), func(id int32) bool {
			return !slices.Contains(m.OriginalReplicas, id) && !st.InISR(id)
		})
		if len(next.Replicas) != len(st.Replicas) {
			next.ISR = slices.Clone(st.ISR)
			next.BucketEpoch++
			res.Write, res.Next = true, next
		}
		return res
	}
	if st.Leader == cluster.NoLeader || !live(st.Leader) {
		return running
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
		return StepResult{Kind: AddReplicas, Status: StatusRebalancing, Write: true, Next: next}
	}
	for _, id := range m.NewReplicas {
		if !st.InISR(id) {
			return running // still catching up
		}
	}
	leader := m.NewLeader
	if !live(leader) {
		leader = cluster.NoLeader
		for _, id := range m.NewReplicas {
			if live(id) && st.InISR(id) {
				leader = id
				break
			}
		}
	}
	if leader == cluster.NoLeader {
		return running
	}
	if leader != st.Leader && !slices.Contains(m.NewReplicas, st.Leader) {
		// The hand-over fence of a move (docs/cluster.md, "Moves"): the leadership moves
		// first, with the old leader kept as a replica and in the ISR, and the old leader
		// leaves in the next step. The new leader serves from its notification on while the
		// old one answers lookups until it handles its own; kept in the ISR, the old leader
		// holds the new leader's high watermark until it fetches — which it does only after
		// it stopped leading — so no write the new leader acknowledges can be missed by a
		// read the old one answers. Dropped from the ISR in the same step, it could.
		next := st
		next.Replicas = slices.Clone(st.Replicas)
		next.ISR = slices.Clone(st.ISR)
		next.Leader = leader
		next.LeaderEpoch++
		next.BucketEpoch++
		return StepResult{Kind: SwitchLeader, Status: StatusRebalancing, Write: true, Next: next}
	}
	next := st
	next.Replicas = slices.Clone(m.NewReplicas)
	next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return !slices.Contains(m.NewReplicas, id) })
	if leader != st.Leader {
		next.Leader = leader
		next.LeaderEpoch++
	}
	next.BucketEpoch++
	return StepResult{Kind: Switch, Status: StatusRebalancing, Write: true, Next: next}
}
