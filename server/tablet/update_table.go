package tablet

import (
	"context"
	"errors"
	"fmt"

	"github.com/stromdb/strom/internal/metadata"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/kvstore"
)

// UpdateTable applies an altered table (ALTER_TABLE: new options or a new schema version) to
// every open bucket of it: the log takes the new table.log.ttl, the primary-key state the new
// schema and options. Replicas are immutable, so each bucket's Replica is replaced; requests
// already holding the old one finish with it.
func (s *replicaManager) UpdateTable(ctx context.Context, t *cluster.TableInfo) error {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	s.mu.RLock()
	var reps []*Replica
	for k, r := range s.replicas {
		if k.TableID == t.ID {
			reps = append(reps, r)
		}
	}
	s.mu.RUnlock()
	schemas := func(id int16) (metadata.Schema, bool) { return s.opts.Catalog.Schema(t.ID, int32(id)) }
	var errs []error
	for _, r := range reps {
		r.Log.Retention().SetTTL(t.Descriptor.Properties.LogTTL())
		if r.KV != nil {
			if err := r.KV.SetTable(kvstore.TableFromDescriptor(t.ID, int16(t.SchemaID), &t.Descriptor, schemas)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.Bucket, err))
				continue
			}
		}
		nr := *r
		nr.Table = t
		s.mu.Lock()
		if s.replicas[r.Bucket] == r {
			s.replicas[r.Bucket] = &nr
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Leads reports whether the server leads bucket b (GET_CLUSTER_HEALTH).
func (s *replicaManager) Leads(b cluster.Bucket) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.replicas[b]
	return ok && (r.repl == nil || r.repl.leading.Load())
}
