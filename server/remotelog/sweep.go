package remotelog

import (
	"context"
	"fmt"
	"strings"

	"github.com/thanos-io/objstore"
)

func objectRecursive() objstore.IterOption { return objstore.WithRecursiveIter() }

// sweep deletes b's orphans: objects under its remote directory that the committed manifest
// v does not name, written by a leader of b.LeaderEpoch or earlier (ids carry the epoch,
// layout.go). Such a leader can no longer commit (the fence refuses its epoch, and this
// server, the leader at b.LeaderEpoch, runs one pass at a time), so nothing will ever name
// them. Objects of later epochs (a newer leader's uploads in flight) and objects whose names
// Strom did not make are left alone. The committed objects are never touched.
func (m *Manager) sweep(ctx context.Context, b Bucket, v *view) error {
	named := map[string]bool{}
	if v.man != nil {
		for _, s := range v.man.Segments {
			named[s.ID] = true
		}
	}
	bk := m.opts.Storage.Bucket
	var victims []string
	prefix := v.dir + "/"
	err := bk.Iter(ctx, prefix, func(name string) error {
		rel := strings.TrimPrefix(name, prefix)
		if name == v.rec.ManifestKey || strings.HasSuffix(rel, "/") {
			return nil
		}
		var id string
		if mf, ok := strings.CutPrefix(rel, "metadata/"); ok {
			id, ok = strings.CutSuffix(mf, ".manifest")
			if !ok {
				return nil
			}
		} else if i := strings.IndexByte(rel, '/'); i > 0 {
			id = rel[:i]
			if named[id] {
				return nil
			}
		} else {
			return nil
		}
		if e, ok := idEpoch(id); ok && e <= b.LeaderEpoch {
			victims = append(victims, name)
		}
		return nil
	}, objectRecursive())
	if err != nil {
		return fmt.Errorf("remotelog: list %s: %w", v.dir, err)
	}
	for _, k := range victims {
		if err := bk.Delete(ctx, k); err != nil && !bk.IsObjNotFoundErr(err) {
			return fmt.Errorf("remotelog: delete orphan %s: %w", k, err)
		}
	}
	if len(victims) > 0 {
		m.m.orphans.Add(int64(len(victims)))
		m.log.Info("remote log: removed orphaned objects", "bucket", b.Bucket, "objects", len(victims))
	}
	return nil
}
