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

// TestRegistrarReportsEveryAnsweredGrantAndRenewal checks what the tablet server's
// membership fence reads: Register and each answered renewal report when the request was sent
// and the TTL etcd granted; a renewal etcd refused reports nothing.
func TestRegistrarReportsEveryAnsweredGrantAndRenewal(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	type report struct {
		sent time.Time
		ttl  time.Duration
	}
	var reports []report
	r := &Registrar{Client: store.Client(), Reg: Registration{ID: 7, Internal: "x:1"}, TTL: 2 * time.Second, Log: testLog(),
		Renewed: func(sent time.Time, ttl time.Duration) { reports = append(reports, report{sent, ttl}) }}
	before := time.Now()
	lease, err := r.Register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].ttl != 2*time.Second || reports[0].sent.Before(before) {
		t.Fatalf("after Register: reports %v, want one of TTL 2s sent after %v", reports, before)
	}
	if err := r.renew(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || reports[1].sent.Before(reports[0].sent) || reports[1].ttl <= 0 {
		t.Fatalf("after a renewal: reports %v, want a second, later one", reports)
	}
	if _, err := store.Client().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := r.renew(ctx, lease); err == nil {
		t.Fatal("a revoked lease was renewed")
	}
	if len(reports) != 2 {
		t.Fatalf("a refused renewal was reported: %v", reports)
	}
}
