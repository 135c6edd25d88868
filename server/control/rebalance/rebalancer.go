package rebalance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/assign"
	"github.com/stromdb/strom/server/control/bucketstate"
	"github.com/stromdb/strom/server/meta"
)

// Keys of the records, relative to meta.KeyPrefix.
const (
	TagsKey   = "servertags"
	RecordKey = "rebalance"
)

const (
	// maxConcurrentMoves bounds the buckets copied at once (Fluss moves one at a time; a few
	// in parallel keep a rebalance of many small buckets short without flooding a leader).
	maxConcurrentMoves = 4
	defaultMoveTimeout = 2 * time.Minute
	// maxRecord keeps the rebalance record under etcd's default request limit (1.5 MiB)
	// with room for the transaction around it.
	maxRecord = 1 << 20
)

// Coordinator is what the rebalancer needs of the election (election.Elector).
type Coordinator interface {
	Active() bool
	Epoch() int64
	FencedPut(ctx context.Context, key string, val []byte, del bool) error
}

// Rebalancer holds the server tags and the rebalance record as this node knows them, and
// on the active coordinator changes them and drives the moves.
type Rebalancer struct {
	Client      *clientv3.Client
	Coordinator Coordinator
	States      *bucketstate.Cache
	Live        func(int32) bool
	LiveIDs     func() []int32
	// Racks returns the live servers' racks (tablet-server.rack); nil: none.
	Racks  func() map[int32]string
	Writer *assign.Writer
	Notify assign.Notifier
	Log    *slog.Logger
	// MoveTimeout bounds one move (0: 2 min, as Fluss).
	MoveTimeout time.Duration

	mu     sync.RWMutex
	tags   map[int32]ServerTag
	record *Record

	// changeMu serialises the active coordinator's tag and rebalance changes; moveStarted
	// (when each move started, or was first held) is owned by its holder.
	changeMu    sync.Mutex
	moveStarted map[cluster.Bucket]time.Time

	kickOnce sync.Once
	kick     chan struct{}

	// clock is the time moves are timed by; nil: time.Now (tests set their own).
	clock func() time.Time
}

func (r *Rebalancer) now() time.Time {
	if r.clock != nil {
		return r.clock()
	}
	return time.Now()
}

func (r *Rebalancer) moveTimeout() time.Duration {
	if r.MoveTimeout == 0 {
		return defaultMoveTimeout
	}
	return r.MoveTimeout
}

// Owns reports whether key (relative to meta.KeyPrefix) is one of the rebalancer's records.
func Owns(key string) bool { return key == TagsKey || key == RecordKey }

// Apply folds a watched change of one of its keys into the view.
func (r *Rebalancer) Apply(key string, value []byte, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applyLocked(key, value, deleted)
}

func (r *Rebalancer) applyLocked(key string, value []byte, deleted bool) {
	switch key {
	case TagsKey:
		tags := map[int32]ServerTag{}
		if !deleted {
			var raw map[string]int32
			if err := json.Unmarshal(value, &raw); err != nil {
				r.Log.Warn("ignoring corrupt server tags", "err", err)
				return
			}
			for k, v := range raw {
				if id, err := strconv.ParseInt(k, 10, 32); err == nil {
					tags[int32(id)] = ServerTag(v)
				}
			}
		}
		r.tags = tags
	case RecordKey:
		if deleted {
			r.record = nil
			return
		}
		var rec Record
		if err := json.Unmarshal(value, &rec); err != nil {
			r.Log.Warn("ignoring a corrupt rebalance record", "err", err)
			return
		}
		// The active coordinator's own record is newer than (or equal to) what the watch
		// brings back; a record of another id or a later status is a successor's.
		if !r.Coordinator.Active() || r.record == nil {
			r.record = &rec
		}
	}
}

// Replace resets the view to a fresh load at one revision: values holds the records present
// (by key). The tags are replaced; the active coordinator keeps its own rebalance record
// unless it has none.
func (r *Rebalancer) Replace(values map[string][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tags = map[int32]ServerTag{}
	if !r.Coordinator.Active() {
		r.record = nil
	}
	for _, key := range []string{TagsKey, RecordKey} {
		if v, ok := values[key]; ok {
			r.applyLocked(key, v, false)
		}
	}
}

// Load reads the tags and the rebalance record from etcd when this node takes over: its
// predecessor can no longer write (its fence is gone), so what etcd holds now is final,
// while the watch may still be delivering the last writes.
func (r *Rebalancer) Load(ctx context.Context) error {
	resp, err := r.Client.Txn(ctx).Then(clientv3.OpGet(meta.KeyPrefix+TagsKey), clientv3.OpGet(meta.KeyPrefix+RecordKey)).Commit()
	if err != nil {
		return fmt.Errorf("read the server tags and the rebalance: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record = nil
	for i, key := range []string{TagsKey, RecordKey} {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		if len(kvs) == 0 {
			r.applyLocked(key, nil, true)
			continue
		}
		r.applyLocked(key, kvs[0].Value, false)
	}
	return nil
}

// ServerTags returns the tags of the tablet servers.
func (r *Rebalancer) ServerTags() map[int32]ServerTag {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.tags)
}

func (r *Rebalancer) current() *Record {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.record.clone()
}

func (r *Rebalancer) writeTags(ctx context.Context, tags map[int32]ServerTag) error {
	if len(tags) == 0 {
		if err := r.Coordinator.FencedPut(ctx, TagsKey, nil, true); err != nil {
			return err
		}
	} else {
		raw := make(map[string]int32, len(tags))
		for id, t := range tags {
			raw[strconv.Itoa(int(id))] = int32(t)
		}
		val, _ := json.Marshal(raw)
		if err := r.Coordinator.FencedPut(ctx, TagsKey, val, false); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.tags = tags
	r.mu.Unlock()
	return nil
}

// AddServerTag tags servers as AddTags decides, on the active coordinator.
func (r *Rebalancer) AddServerTag(ctx context.Context, ids []int32, tag ServerTag) error {
	if !r.Coordinator.Active() {
		return meta.ErrNotLeader()
	}
	r.changeMu.Lock()
	defer r.changeMu.Unlock()
	known := func(id int32) bool { return r.Live(id) || r.States.AnyReplica(id) }
	tags, err := AddTags(r.ServerTags(), ids, tag, known)
	if err != nil {
		return err
	}
	if err := r.writeTags(ctx, tags); err != nil {
		return err
	}
	r.Log.Info("server tag added", "servers", ids, "tag", tag)
	return nil
}

// RemoveServerTag removes a tag as RemoveTags decides, on the active coordinator.
func (r *Rebalancer) RemoveServerTag(ctx context.Context, ids []int32, tag ServerTag) error {
	if !r.Coordinator.Active() {
		return meta.ErrNotLeader()
	}
	r.changeMu.Lock()
	defer r.changeMu.Unlock()
	tags, err := RemoveTags(r.ServerTags(), ids, tag)
	if err != nil {
		return err
	}
	if err := r.writeTags(ctx, tags); err != nil {
		return err
	}
	r.Log.Info("server tag removed", "servers", ids, "tag", tag)
	return nil
}

// StartRebalance plans a rebalance for goals and starts it (Fluss's REBALANCE); it returns
// its id. One rebalance runs at a time: REBALANCE_FAILURE while another is not final, or
// when the plan cannot be made. An empty plan completes at once.
func (r *Rebalancer) StartRebalance(ctx context.Context, goals []Goal) (string, error) {
	if !r.Coordinator.Active() {
		return "", meta.ErrNotLeader()
	}
	r.changeMu.Lock()
	defer r.changeMu.Unlock()
	if cur := r.current(); cur != nil && !cur.Status.Final() {
		return "", ferr.New(ferr.RebalanceFailureException, "Rebalance task already exists, current rebalance id is '%s'. Please wait for it to finish or cancel it first.", cur.ID)
	}
	var racks map[int32]string
	if r.Racks != nil {
		racks = r.Racks()
	}
	moves, err := Plan(r.States.Snapshot(), r.LiveIDs(), racks, r.ServerTags(), goals)
	if err != nil {
		return "", err
	}
	var id [16]byte
	rand.Read(id[:])
	rec := &Record{ID: hex.EncodeToString(id[:]), Status: StatusNotStarted, Goals: slices.Clone(goals), Moves: moves, CreatedMs: time.Now().UnixMilli()}
	if len(moves) == 0 {
		rec.Status = StatusCompleted
	}
	if val, _ := json.Marshal(rec); len(val) > maxRecord {
		return "", ferr.New(ferr.RebalanceFailureException, "the plan moves %d buckets, too many for one rebalance record (%d bytes, at most %d); tag fewer servers at a time", len(moves), len(val), maxRecord)
	}
	if err := r.save(ctx, rec); err != nil {
		return "", err
	}
	r.Log.Info("rebalance planned", "id", rec.ID, "goals", goals, "moves", len(moves))
	r.Kick()
	return rec.ID, nil
}

// save writes rec under the fence and makes it this node's record; the caller holds changeMu.
func (r *Rebalancer) save(ctx context.Context, rec *Record) error {
	val, _ := json.Marshal(rec)
	if err := r.Coordinator.FencedPut(ctx, RecordKey, val, false); err != nil {
		return err
	}
	r.mu.Lock()
	r.record = rec.clone()
	r.mu.Unlock()
	return nil
}

// Progress returns the current or last rebalance (Fluss's LIST_REBALANCE_PROGRESS): nil
// when there has been none. An id that is not the current one's: NO_REBALANCE_IN_PROGRESS.
func (r *Rebalancer) Progress(id string) (*Record, error) {
	if !r.Coordinator.Active() {
		return nil, meta.ErrNotLeader()
	}
	rec := r.current()
	if id != "" && rec != nil && rec.ID != id {
		return nil, ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to list is not the current rebalance task id %s.", id, rec.ID)
	}
	if id != "" && rec == nil {
		return nil, ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to list does not exist: there is no rebalance.", id)
	}
	return rec, nil
}

// CancelRebalance cancels the current rebalance as Cancel decides. No rebalance, or another
// id: NO_REBALANCE_IN_PROGRESS.
func (r *Rebalancer) CancelRebalance(ctx context.Context, id string) error {
	if !r.Coordinator.Active() {
		return meta.ErrNotLeader()
	}
	r.changeMu.Lock()
	defer r.changeMu.Unlock()
	rec := r.current()
	if rec == nil {
		return ferr.New(ferr.NoRebalanceInProgressException, "No rebalance task in progress.")
	}
	if id != "" && rec.ID != id {
		return ferr.New(ferr.NoRebalanceInProgressException, "Rebalance task id %s to cancel is not the current rebalance task id %s.", id, rec.ID)
	}
	if rec.Status.Final() {
		return nil
	}
	running := Cancel(rec)
	if err := r.save(ctx, rec); err != nil {
		return err
	}
	r.Log.Info("rebalance canceled", "id", rec.ID, "moves_running", running)
	return nil
}

func (r *Rebalancer) kicks() chan struct{} {
	r.kickOnce.Do(func() { r.kick = make(chan struct{}, 1) })
	return r.kick
}

// Kick asks for a step now (a plan, a bucket state change), coalesced.
func (r *Rebalancer) Kick() {
	select {
	case r.kicks() <- struct{}{}:
	default:
	}
}

// Run advances the current rebalance while this node is the active coordinator, at every
// Kick and every 200 ms, until ctx ends.
func (r *Rebalancer) Run(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kicks():
		case <-t.C:
		}
		if !r.Coordinator.Active() {
			r.moveStarted = nil
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := r.step(sctx); err != nil && ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
			r.Log.Warn("rebalance step failed", "err", err)
		}
		cancel()
	}
}

// step advances every started move by what the bucket states allow, starts moves while
// fewer than maxConcurrentMoves run (none once a move was canceled), and ends the rebalance
// when no move is left (Outcome). It saves the record when a status changed.
func (r *Rebalancer) step(ctx context.Context) error {
	r.changeMu.Lock()
	defer r.changeMu.Unlock()
	rec := r.current()
	if rec == nil || rec.Status.Final() {
		return nil
	}
	if r.moveStarted == nil {
		r.moveStarted = map[cluster.Bucket]time.Time{}
	}
	running, advanced, err := r.advanceRunning(ctx, rec)
	if err != nil {
		return err
	}
	running, started, err := r.startMoves(ctx, rec, running)
	if err != nil {
		return err
	}
	changed := advanced || started
	if running == 0 {
		if status, ended := Outcome(rec.Moves); ended {
			rec.Status = status
			changed = true
			r.Log.Info("rebalance finished", "id", rec.ID, "status", rec.Status)
		}
	}
	if rec.Status == StatusNotStarted {
		rec.Status = StatusRebalancing
		changed = true
	}
	if !changed {
		return nil
	}
	return r.save(ctx, rec)
}

// advanceRunning advances every move of rec in progress; it returns how many still run and
// whether a status changed.
func (r *Rebalancer) advanceRunning(ctx context.Context, rec *Record) (running int, changed bool, err error) {
	for i := range rec.Moves {
		m := &rec.Moves[i]
		if m.Status != StatusRebalancing {
			continue
		}
		if err := r.advance(ctx, m); err != nil {
			return 0, false, err
		}
		if m.Status != StatusRebalancing {
			changed = true
			delete(r.moveStarted, m.Bucket)
		} else {
			running++
		}
	}
	return running, changed, nil
}

// startMoves starts the moves of rec not yet started, in order, as Admit decides, while fewer
// than maxConcurrentMoves run and no move was canceled. It returns how many run now and
// whether a status changed.
func (r *Rebalancer) startMoves(ctx context.Context, rec *Record, running int) (int, bool, error) {
	if slices.ContainsFunc(rec.Moves, func(m Move) bool { return m.Status == StatusCanceled }) {
		return running, false, nil
	}
	changed := false
	for i := range rec.Moves {
		m := &rec.Moves[i]
		if running >= maxConcurrentMoves {
			break
		}
		if m.Status != StatusNotStarted {
			continue
		}
		first, held := r.moveStarted[m.Bucket]
		if !held {
			first = r.now()
			r.moveStarted[m.Bucket] = first
		}
		st, ok := r.States.State(m.Bucket)
		admission, status, reason := Admit(st, ok, r.Live, r.now().Sub(first), r.moveTimeout())
		switch admission {
		case Hold:
			// Tried again at the next step, within the move's timeout.
			r.Log.Debug("rebalance move held", "bucket", m.Bucket, "reason", reason)
			continue
		case Refuse:
			changed = true
			m.Status, m.Reason = status, reason
			r.Log.Warn("rebalance move refused", "bucket", m.Bucket, "status", m.Status, "reason", reason)
			delete(r.moveStarted, m.Bucket)
			continue
		}
		changed = true
		m.Status = StatusRebalancing
		r.moveStarted[m.Bucket] = r.now()
		running++
		if err := r.advance(ctx, m); err != nil {
			return 0, false, err
		}
	}
	return running, changed, nil
}

// advance takes the next step of a started move, as Step decides from the bucket's current
// state, or finishes it.
func (r *Rebalancer) advance(ctx context.Context, m *Move) error {
	e, ok := r.States.Get(m.Bucket)
	if !ok {
		m.Status, m.Reason = StatusFailed, "the bucket no longer exists"
		return nil
	}
	if e.Rev == 0 {
		return nil // written by us, not yet seen by the watch: decide on the next step
	}
	started, ok := r.moveStarted[m.Bucket]
	if !ok {
		started = r.now() // continued after a takeover: its time starts again
		r.moveStarted[m.Bucket] = started
	}
	res := Step(*m, e.State, r.Live, r.now().Sub(started) > r.moveTimeout())
	m.Status = res.Status
	if res.Reason != "" {
		m.Reason = res.Reason
	}
	switch res.Kind {
	case AddReplicas:
		r.Log.Info("rebalance: adding replicas", "bucket", m.Bucket, "replicas", res.Next.Replicas)
	case Switch:
		r.Log.Info("rebalance: switching to the new replicas", "bucket", m.Bucket, "replicas", res.Next.Replicas, "leader", res.Next.Leader, "isr", res.Next.ISR)
	case RollBack:
		r.Log.Warn("rebalance move timed out", "bucket", m.Bucket, "replicas", e.State.Replicas, "isr", e.State.ISR)
	}
	if !res.Write {
		return nil
	}
	return r.write(ctx, m.Bucket, e.Rev, res.Next)
}

// write writes a move's next state (a compare-and-swap under the fence, serialised with
// leader elections) and tells the replicas. Replicas the state no longer lists learn it from
// their watch (the notifier passes a state that stops listing a server to that server, which
// drops its copy). A state that moved on meanwhile is decided again at the next step.
func (r *Rebalancer) write(ctx context.Context, b cluster.Bucket, rev int64, next cluster.BucketState) error {
	r.Writer.Lock()
	defer r.Writer.Unlock()
	next.CoordinatorEpoch = r.Coordinator.Epoch()
	newRev, err := r.Writer.Swap(ctx, b, rev, next)
	if err != nil || newRev == 0 {
		return err
	}
	r.Notify.Notify(ctx, map[cluster.Bucket]cluster.BucketState{b: next}, nil, nil)
	return nil
}
