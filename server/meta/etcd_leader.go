package meta

import (
	"context"
	"errors"
	"fmt"
)

// RaftLeader returns the member id of the etcd cluster's Raft leader: the embedded member's
// view when the store runs one (its client may reach it over a socket that a status dial
// cannot), otherwise the first endpoint that answers a status request.
func (s *EtcdStore) RaftLeader(ctx context.Context) (uint64, error) {
	if s.embedded != nil {
		return uint64(s.embedded.Server.Leader()), nil
	}
	var errs []error
	for _, ep := range s.cli.Endpoints() {
		st, err := s.cli.Status(ctx, ep)
		if err == nil {
			return st.Leader, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	return 0, fmt.Errorf("etcd status: %w", errors.Join(errs...))
}
