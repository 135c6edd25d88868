package tablet

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
)

// projectionKey identifies a prepared projection: batches written with different schema ids
// need their own, since column positions in the IPC body follow the batch's schema; and a
// batch older than the table's latest schema is projected onto the latest (targetID).
type projectionKey struct {
	tableID  int64
	schemaID int16
	targetID int16
	fields   string
}

// projections caches prepared projections. Entries are small and bounded by the number of
// distinct (table, schema, projection) combinations clients use.
type projections struct {
	mu sync.Mutex
	m  map[projectionKey]*arrowlog.Projection
}

// projection returns the projection of fields (positions in t's latest schema) for batches
// written under schemaID. Columns added after schemaID come out as all-NULL columns and such
// batches are relabelled with the latest schema id, so readers of old batches get them in
// the shape of the latest schema (arrowlog.NewProjectionTo).
func (s *fetchService) projection(t *cluster.TableInfo, schemaID int16, fields []int) (*arrowlog.Projection, error) {
	target := int16(t.SchemaID)
	key := projectionKey{tableID: t.ID, schemaID: schemaID, targetID: target, fields: fmt.Sprint(fields)}
	s.proj.mu.Lock()
	defer s.proj.mu.Unlock()
	if p, ok := s.proj.m[key]; ok {
		return p, nil
	}
	arrowOf := func(id int16) (*arrow.Schema, error) {
		schema, ok := s.opts.Catalog.Schema(t.ID, int32(id))
		if !ok {
			return nil, ferr.New(ferr.SchemaNotExist, "Schema %d of table %s does not exist.", id, t.Path)
		}
		return arrowlog.ArrowSchema(schema.Columns)
	}
	as, err := arrowOf(schemaID)
	if err != nil {
		return nil, err
	}
	var p *arrowlog.Projection
	if schemaID < target {
		var ts *arrow.Schema
		if ts, err = arrowOf(target); err != nil {
			return nil, err
		}
		p, err = arrowlog.NewProjectionTo(as, ts, target, fields)
	} else {
		p, err = arrowlog.NewProjection(as, fields)
	}
	if err != nil {
		return nil, err
	}
	if s.proj.m == nil {
		s.proj.m = map[projectionKey]*arrowlog.Projection{}
	}
	s.proj.m[key] = p
	return p, nil
}

// project rewrites stored ARROW batches to carry only the projected columns.
func (s *fetchService) project(t *cluster.TableInfo, data []byte, fields []int) ([]byte, error) {
	out := make([]byte, 0, len(data))
	for b, err := range record.Iterate(data) {
		if err != nil {
			return nil, err
		}
		p, err := s.projection(t, b.SchemaID(), fields)
		if err != nil {
			return nil, err
		}
		if out, err = p.AppendBatch(out, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}
