package fluss_test

import (
	"errors"
	"testing"

	"github.com/stromdb/strom/fluss"
)

// Every bucket of a table has its replica set in metadata, and the leader is one of them; a
// missing table or partition is named by its error code.
func TestBucketReplicas(t *testing.T) {
	conn, ctx := connect(t)
	path := createTable(t, ctx, conn, "replicas", pkDesc(3)).Path()
	admin := conn.Admin()
	reps, err := admin.BucketReplicas(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	leaders, err := admin.BucketLeaders(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 {
		t.Fatalf("replicas of %d buckets, want 3: %v", len(reps), reps)
	}
	for b, ids := range reps {
		found := false
		for _, id := range ids {
			found = found || id == leaders[b].ID
		}
		if !found {
			t.Errorf("bucket %d: leader %d not among replicas %v", b, leaders[b].ID, ids)
		}
	}
	if _, err := admin.BucketReplicas(ctx, fluss.NewTablePath("fluss", "no_such_table"), ""); !errors.Is(err, fluss.ErrTableNotExist) {
		t.Errorf("missing table: %v", err)
	}
	if _, err := admin.BucketReplicas(ctx, path, "nope"); err == nil {
		t.Error("a partition of a table without partitions: no error")
	}
}
