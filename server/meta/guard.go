package meta

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrGuardMoved is returned by TxnGuarded when the guard key was modified (or deleted) since
// the revision the caller read it at: the caller's decision was taken on a stale record.
var ErrGuardMoved = errors.New("meta: guard key changed")

// GetRevision returns the value of key and its mod revision, or ErrNotFound.
func (s *EtcdStore) GetRevision(ctx context.Context, key string) ([]byte, int64, error) {
	resp, err := s.cli.Get(ctx, keyPrefix+key)
	if err != nil {
		return nil, 0, fmt.Errorf("meta get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, ErrNotFound
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, nil
}

// TxnGuarded is Txn under a guard: it applies only while guardKey still has mod revision
// guardRev (the record the caller based its decision on is unchanged). ErrGuardMoved when the
// guard no longer holds; otherwise ok reports whether conds held and ops were applied. A
// bucket's leader uses it with the bucket's state record as the guard, so that a deposed
// leader's write fails (docs/kv-snapshots.md).
func (s *EtcdStore) TxnGuarded(ctx context.Context, guardKey string, guardRev int64, conds []Cond, ops []Op) (bool, error) {
	inner := clientv3.OpTxn(etcdCmps(conds), etcdOps(ops), nil)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(keyPrefix+guardKey), "=", guardRev)).
		Then(inner).Commit()
	if err != nil {
		return false, fmt.Errorf("meta txn: %w", err)
	}
	if !resp.Succeeded {
		return false, ErrGuardMoved
	}
	return resp.Responses[0].GetResponseTxn().Succeeded, nil
}
