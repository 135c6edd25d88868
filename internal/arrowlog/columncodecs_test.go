package arrowlog

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// Every Fluss type root has an Arrow type, appender and reader: a root added to
// internal/typetable with a partial codec fails here.
func TestEveryRootHasAnArrowCodec(t *testing.T) {
	for _, r := range metadata.TypeRoots() {
		c := &columnCodecs[r]
		if c.arrowType == nil || c.appender == nil || c.reader == nil {
			t.Errorf("%v: Arrow codec lacks an operation: %+v", r, c)
		}
	}
}
