package kvsnap

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stromdb/strom/server/remote"
	"github.com/stromdb/strom/server/remote/remotetest"
)

// TestSnapshotsInS3: snapshots written to, read from and cleaned up in S3 (the emulator),
// with nothing on a shared disk: incremental on the local copy of the base, and after a
// restart (no local copy) on a download of it; the files handed to clients are s3:// paths;
// cleanup deletes the objects; a store that refuses every request fails the pass without a
// commit, a whole pass stops at the first refusal, and the next pass after it recovers
// succeeds.
func TestSnapshotsInS3(t *testing.T) {
	e := remotetest.Start(t)
	cfg := e.Config("snaps")
	cfg.MaxRetries = -1 // the refusal below fails at once
	st, err := remote.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, st)
	batch := map[int]string{}
	for i := range 200 {
		batch[i] = "v0"
	}
	h.put(batch)
	s0, _ := h.snapshot()
	h.put(map[int]string{1: "v1", 2: ""})
	s1, _ := h.snapshot()
	if len(s1.Tables) != 2 {
		t.Fatalf("second snapshot not incremental: %+v", s1.Tables)
	}
	sameState(t, "snapshot 1 read from S3", h.read(s1), h.current())
	for _, f := range h.m.Files(testBucket, s1) {
		if !strings.HasPrefix(f.RemotePath, "s3://strom/snaps/"+bucketKey(testBucket)+"/") {
			t.Fatalf("client path %q", f.RemotePath)
		}
	}

	// A restart empties the local directory: the next incremental snapshot downloads its base.
	h.openManager()
	h.put(map[int]string{3: "v3"})
	s2, _ := h.snapshot()
	if len(s2.Tables) != 3 {
		t.Fatalf("snapshot after a restart not incremental: %+v", s2.Tables)
	}
	rows, ok, err := h.m.OpenLatest(context.Background(), testBucket)
	if err != nil || !ok {
		t.Fatalf("OpenLatest: %v %v", ok, err)
	}
	got := map[string]string{}
	for ; rows.Valid(); rows.Next() {
		got[string(rows.Key())] = string(rows.Value())
	}
	rows.Close()
	sameState(t, "OpenLatest from S3", got, h.current())

	// Cleanup (2 retained) drops snapshot 0's private objects; its table is shared by the rest.
	if err := h.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := e.Keys(t)
	for _, k := range keys {
		if strings.Contains(k, "/"+s0.dirName()+"/") {
			t.Errorf("%s survived cleanup", k)
		}
	}
	if !slices.Contains(keys, "snaps/"+tableKey(testBucket, s0.Tables[0].Number)) {
		t.Errorf("the shared base table was deleted: %q", keys)
	}

	// S3 down: the pass fails, nothing is committed; back up, the next pass commits.
	h.put(map[int]string{4: "v4"})
	e.Refuse(true)
	if _, _, err := h.m.SnapshotBucket(context.Background(), Bucket{Bucket: testBucket, KV: h.tab}); err == nil {
		t.Fatal("a snapshot with S3 refusing every request succeeded")
	}
	if l, _ := h.m.Latest(testBucket); l.ID != s2.ID {
		t.Fatalf("a failed upload committed snapshot %d", l.ID)
	}
	// A whole pass stops at the store's first failure instead of trying every step of every
	// bucket against it.
	before := e.Refused()
	h.m.SnapshotAll(context.Background())
	if n := e.Refused() - before; n != 1 {
		t.Fatalf("a pass with S3 down sent %d requests, want 1", n)
	}
	e.Refuse(false)
	s3, fresh := h.snapshot()
	if !fresh || s3.ID != s2.ID+1 {
		t.Fatalf("snapshot after S3 came back: %+v fresh=%v", s3, fresh)
	}
	sameState(t, "snapshot after the outage", h.read(s3), h.current())
}
