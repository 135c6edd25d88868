package control

import (
	"context"
	"testing"
	"time"

	"github.com/stromdb/strom/server/meta"
)

// TestReviveLeaseKeepsALiveLease checks the two answers keepRegistered acts on after its
// keepalive stream ended: a lease etcd still holds is kept (no moment without a
// registration), and a lease etcd no longer has is given up at once, without waiting out
// the retries.
func TestReviveLeaseKeepsALiveLease(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c := New(Options{Store: store, Log: testLog(), TabletTTL: 2 * time.Second})
	c.ctx, c.cancel = context.WithCancel(ctx)
	t.Cleanup(c.cancel)
	cli := store.Client()
	lease, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !c.reviveLease(lease.ID) {
		t.Fatal("a lease etcd still holds was given up")
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if c.reviveLease(lease.ID) {
		t.Fatal("a revoked lease was revived")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("giving up an expired lease took %v: etcd's answer was not taken as final", took)
	}
}
