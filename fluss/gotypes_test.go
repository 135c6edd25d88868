package fluss

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// Every Fluss type root has its Go conversions both ways, a public TypeRoot of the same
// name, and a partition spelling exactly when Fluss lets it key partitions (a root added to
// internal/typetable with a partial entry fails here).
func TestEveryRootHasAGoType(t *testing.T) {
	for _, r := range metadata.TypeRoots() {
		g := goTypeOf(metadata.DataType{Root: r})
		if g == nil || g.toDatum == nil || g.fromDatum == nil {
			t.Errorf("%v: no Go conversion", r)
			continue
		}
		if (g.partitionValue != nil) != metadata.PartitionKeyTypeSupported(r) {
			t.Errorf("%v: partition value spelling present = %v, want %v", r, g.partitionValue != nil, metadata.PartitionKeyTypeSupported(r))
		}
		if TypeRoot(r).String() != r.String() {
			t.Errorf("public root %d is %v, internal %v", r, TypeRoot(r), r)
		}
	}
}
