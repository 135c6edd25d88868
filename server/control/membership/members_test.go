package membership

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/meta"
)

func testLog() *slog.Logger {
	if os.Getenv("STROM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		key  string
		id   int32
		isID bool
	}{
		{Key(7), 7, true},
		{"servers/12", 12, true},
		{"servers/x", 0, false},
		{"servers/", 0, false},
		{"buckets/1/-/0", 0, false},
	} {
		id, ok := ParseKey(tc.key)
		if ok != tc.isID || (ok && id != tc.id) {
			t.Errorf("ParseKey(%q) = %d, %v; want %d, %v", tc.key, id, ok, tc.id, tc.isID)
		}
	}
}

func TestDecode(t *testing.T) {
	reg, err := Decode([]byte(`{"id":3,"endpoints":[{"listener":"FLUSS","host":"h","port":9}],"internal":"h:9"}`))
	if err != nil || reg.ID != 3 || reg.Internal != "h:9" || len(reg.Endpoints) != 1 {
		t.Fatalf("Decode = %+v, %v", reg, err)
	}
	if _, err := Decode([]byte("{")); err == nil || !strings.Contains(err.Error(), "corrupt server registration") {
		t.Fatalf("Decode of a corrupt value: %v", err)
	}
}

func TestMembers(t *testing.T) {
	m := NewMembers()
	if len(m.IDs()) != 0 || m.IsLive(1) {
		t.Fatal("a new set is not empty")
	}
	m.Replace(map[int32]Registration{9: {ID: 9, Internal: "a:1"}, 2: {ID: 2}, 5: {ID: 5, Internal: "c:3",
		Endpoints: []cluster.Endpoint{{Listener: "FLUSS", Host: "c", Port: 3}}}})
	if got := m.IDs(); !slices.Equal(got, []int32{2, 5, 9}) {
		t.Fatalf("IDs = %v, want sorted [2 5 9]", got)
	}
	if addr, ok := m.InternalAddr(9); !ok || addr != "a:1" {
		t.Fatalf("InternalAddr(9) = %q, %v", addr, ok)
	}
	if _, ok := m.InternalAddr(2); ok {
		t.Fatal("a server without an internal listener has an internal address")
	}
	if _, ok := m.InternalAddr(42); ok {
		t.Fatal("an unknown server has an internal address")
	}
	m.Delete(9)
	m.Put(11, Registration{ID: 11})
	if m.IsLive(9) || !m.IsLive(11) || !slices.Equal(m.IDs(), []int32{2, 5, 11}) {
		t.Fatalf("after Delete and Put: %v", m.IDs())
	}
	eps := m.Endpoints()
	if len(eps) != 3 || len(eps[5]) != 1 || eps[5][0].Host != "c" {
		t.Fatalf("Endpoints = %v", eps)
	}
}

// TestRegisterRefusesALiveDuplicate checks that a second server with a live registration's
// id is refused (after waiting out at most twice the TTL), and that the first server's
// registration disappears at once when its keeper stops.
func TestRegisterRefusesALiveDuplicate(t *testing.T) {
	ctx := context.Background()
	store, err := meta.OpenEmbedded(ctx, t.TempDir(), testLog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cli := store.Client()
	first := &Registrar{Client: cli, Reg: Registration{ID: 4, Internal: "x:1"}, TTL: time.Second, Log: testLog()}
	lease, err := first.Register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() { defer close(kept); first.Keep(kctx, lease) }()
	resp, err := cli.Get(ctx, meta.KeyPrefix+Key(4))
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != int64(lease) {
		t.Fatalf("registration not stored under its lease: %v %v", resp, err)
	}
	second := &Registrar{Client: cli, Reg: Registration{ID: 4}, TTL: time.Second, Log: testLog()}
	if _, err := second.registerOnce(ctx, false, false); err == nil || !strings.Contains(err.Error(), "registered by another live server") {
		t.Fatalf("a duplicate id was registered: %v", err)
	}
	stop()
	<-kept
	resp, err = cli.Get(ctx, meta.KeyPrefix+Key(4))
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the registration outlived its keeper: %v %v", resp.Kvs, err)
	}
	if _, err := second.registerOnce(ctx, false, false); err != nil {
		t.Fatalf("the id is free again, yet: %v", err)
	}
}

// A registration carries its server's rack (tablet-server.rack) through etcd's JSON, an old
// registration without one decodes as rack "", and Racks lists only the servers with one.
func TestRacks(t *testing.T) {
	val, err := json.Marshal(Registration{ID: 4, Rack: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Decode(val)
	if err != nil || reg.Rack != "r1" {
		t.Fatalf("Decode(%s) = %+v, %v", val, reg, err)
	}
	if old, err := Decode([]byte(`{"id":3,"internal":"h:9"}`)); err != nil || old.Rack != "" {
		t.Fatalf("Decode of a registration without a rack = %+v, %v", old, err)
	}
	m := NewMembers()
	m.Replace(map[int32]Registration{4: reg, 5: {ID: 5}})
	if got := m.Racks(); len(got) != 1 || got[4] != "r1" {
		t.Fatalf("Racks = %v, want map[4:r1]", got)
	}
}
