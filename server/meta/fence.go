package meta

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/stromdb/strom/internal/ferr"
)

// Fence is the fencing condition of a writer: its election key, created at Epoch. While the
// writer leads, the key exists with that create revision; once it lost its lease or resigned
// the key is gone (a successor's key has another revision), and every fenced write fails.
type Fence struct {
	Key   string // without KeyPrefix
	Epoch int64  // the key's create revision
}

// FenceSource returns the writer's current fence; ok false while it does not lead.
type FenceSource func() (f Fence, ok bool)

// FencedStore is a Store whose every transaction also requires the fence to hold. Reads and
// id counters pass through: a gap in ids is harmless, and reads do not change anything.
type FencedStore struct {
	*EtcdStore
	fence FenceSource
}

// NewFencedStore returns a store on s whose transactions hold only while fence does.
func NewFencedStore(s *EtcdStore, fence FenceSource) *FencedStore {
	return &FencedStore{EtcdStore: s, fence: fence}
}

// ErrNotLeader builds the error of a write attempted by a coordinator that is not (or no
// longer) the active one: Fluss's NOT_COORDINATOR_LEADER_EXCEPTION.
func ErrNotLeader() error {
	return ferr.New(ferr.NotCoordinatorLeaderException, "This coordinator server is not the current leader.")
}

// Txn implements Store: the transaction applies only if the fence holds and every condition
// does. A broken fence gives ErrNotLeader, not ok=false, so that no caller mistakes it for a
// failed condition of its own.
func (f *FencedStore) Txn(ctx context.Context, conds []Cond, ops []Op) (bool, error) {
	fence, ok := f.fence()
	if !ok {
		return false, ErrNotLeader()
	}
	return f.EtcdStore.TxnFenced(ctx, fence, conds, ops)
}

// TxnFenced is Txn under a fence: ErrNotLeader when the fence no longer holds, else ok
// reports whether conds held and ops were applied.
func (s *EtcdStore) TxnFenced(ctx context.Context, fence Fence, conds []Cond, ops []Op) (bool, error) {
	inner := clientv3.OpTxn(etcdCmps(conds), etcdOps(ops), nil)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(keyPrefix+fence.Key), "=", fence.Epoch)).
		Then(inner).Commit()
	if err != nil {
		return false, fmt.Errorf("meta txn: %w", err)
	}
	if !resp.Succeeded {
		return false, ErrNotLeader()
	}
	return resp.Responses[0].GetResponseTxn().Succeeded, nil
}
