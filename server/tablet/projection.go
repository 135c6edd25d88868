package tablet

import (
	"fmt"
	"sync"

	"github.com/stromdb/strom/internal/arrowlog"
	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/record"
	"github.com/stromdb/strom/server/cluster"
)

// projectionKey identifies a prepared projection: batches written with different schema ids
// need their own, since column positions in the IPC body follow the batch's schema.
type projectionKey struct {
	tableID  int64
	schemaID int16
	fields   string
}

// projections caches prepared projections. Entries are small and bounded by the number of
// distinct (table, schema, projection) combinations clients use.
type projections struct {
	mu sync.Mutex
	m  map[projectionKey]*arrowlog.Projection
}

func (s *Server) projection(t *cluster.TableInfo, schemaID int16, fields []int) (*arrowlog.Projection, error) {
	key := projectionKey{tableID: t.ID, schemaID: schemaID, fields: fmt.Sprint(fields)}
	s.proj.mu.Lock()
	defer s.proj.mu.Unlock()
	if p, ok := s.proj.m[key]; ok {
		return p, nil
	}
	schema, ok := s.opts.Catalog.Schema(t.ID, int32(schemaID))
	if !ok {
		return nil, ferr.New(ferr.SchemaNotExist, "Schema %d of table %s does not exist.", schemaID, t.Path)
	}
	as, err := arrowlog.ArrowSchema(schema.Columns)
	if err != nil {
		return nil, err
	}
	p, err := arrowlog.NewProjection(as, fields)
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
func (s *Server) project(t *cluster.TableInfo, data []byte, fields []int) ([]byte, error) {
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
