package fluss

import (
	"testing"

	"github.com/stromdb/strom/internal/metadata"
)

// Every Fluss type root has its Go conversions both ways, a public TypeRoot of the same
// name, and a partition spelling exactly when Fluss lets it key partitions (a root added to
// internal/typetable with a partial entry fails here).
func TestEveryRootHasAGoType(t *testing.T) {
	partitionKeyRoots := map[metadata.TypeRoot]bool{
		metadata.Boolean: true, metadata.TinyInt: true, metadata.SmallInt: true, metadata.Int: true,
		metadata.BigInt: true, metadata.Float: true, metadata.Double: true, metadata.Char: true,
		metadata.String: true, metadata.Binary: true, metadata.Bytes: true, metadata.Date: true,
		metadata.Time: true, metadata.Timestamp: true, metadata.TimestampLTZ: true,
	}
	for _, r := range metadata.TypeRoots() {
		g := goTypeOf(metadata.DataType{Root: r})
		if g == nil || g.toDatum == nil || g.fromDatum == nil {
			t.Errorf("%v: no Go conversion", r)
			continue
		}
		if (g.partitionValue != nil) != partitionKeyRoots[r] {
			t.Errorf("%v: partition value spelling present = %v, want %v", r, g.partitionValue != nil, partitionKeyRoots[r])
		}
		if TypeRoot(r).String() != r.String() {
			t.Errorf("public root %d is %v, internal %v", r, TypeRoot(r), r)
		}
	}
}
