package row

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// Every Fluss type root has every row-format operation: a root added to
// internal/typetable with a partial codec fails here.
func TestEveryRootHasARowCodec(t *testing.T) {
	for _, r := range metadata.TypeRoots() {
		c := &typeCodecs[r]
		switch {
		case c.appendCompacted == nil || c.readCompacted == nil || c.skipCompacted == nil:
			t.Errorf("%v: no CompactedRow codec", r)
		case c.appendIndexed == nil || c.readIndexed == nil || (c.widthOf == nil && c.indexedWidth == indexedInvalid):
			t.Errorf("%v: no IndexedRow codec", r)
		case c.appendElem == nil || c.readElem == nil || c.elemSize <= 0:
			t.Errorf("%v: no BinaryArray codec", r)
		}
	}
	// The roots outside the list keep refusing values.
	if c := &typeCodecs[metadata.LastTypeRoot+1]; c.elemSize != 0 || c.indexedWidth != indexedInvalid {
		t.Errorf("root after the last has a codec")
	}
}
