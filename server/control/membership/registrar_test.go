package membership

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/stromdb/strom/server/meta"
)

// TestRenewLeaseKeepsALiveLease checks the two answers Keep acts on: a lease etcd
// still holds is renewed (no moment without a registration), and a lease etcd no longer has
// is reported expired at once.
func TestRenewLeaseKeepsALiveLease(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	r := &Registrar{Client: cli, TTL: 2 * time.Second, Log: testLog()}
	lease, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.renew(ctx, lease.ID); err != nil {
		t.Fatalf("a lease etcd still holds was not renewed: %v", err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.renew(ctx, lease.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("a revoked lease: %v, want lease not found", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("giving up an expired lease took %v: etcd's answer was not taken as final", took)
	}
}
