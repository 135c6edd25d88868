package meta

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/stromdb/strom/internal/ferr"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startMembers starts an etcd cluster of n embedded members on loopback ports.
func startMembers(t *testing.T, n int) []*EtcdStore {
	stores, _, _ := startMembersIn(t, n)
	return stores
}

// startMembersIn is startMembers returning also each member's options and directory.
func startMembersIn(t *testing.T, n int) ([]*EtcdStore, []Member, []string) {
	t.Helper()
	members := make([]Member, n)
	var initial []string
	for i := range members {
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		members[i] = Member{Name: fmt.Sprintf("m%d", i), ListenPeerURLs: []url.URL{peer}, AdvertisePeerURLs: []url.URL{peer},
			ListenClientURLs: []url.URL{client}, AdvertiseClientURLs: []url.URL{client}}
		initial = append(initial, members[i].Name+"="+peer.String())
	}
	stores := make([]*EtcdStore, n)
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range members {
		members[i].InitialCluster = strings.Join(initial, ",")
		dirs[i] = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = OpenMember(context.Background(), dirs[i], members[i], log)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	return stores, members, dirs
}

func TestMembersShareWritesAndFenceDeposedWriter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := startMembers(t, 3)
	if ok, err := s[0].Txn(ctx, nil, []Op{Put("k", []byte("v"))}); err != nil || !ok {
		t.Fatalf("put: %v %v", ok, err)
	}
	if v, err := s[2].Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read on another member: %q %v", v, err)
	}

	// Two writers campaign; the first wins, and its fenced writes apply.
	elect := func(st *EtcdStore) (*concurrency.Session, Fence) {
		sess, err := concurrency.NewSession(st.Client(), concurrency.WithTTL(5))
		if err != nil {
			t.Fatal(err)
		}
		e := concurrency.NewElection(sess, KeyPrefix+"test-election")
		if err := e.Campaign(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		return sess, Fence{Key: strings.TrimPrefix(e.Key(), KeyPrefix), Epoch: e.Rev()}
	}
	s1, f1 := elect(s[0])
	if ok, err := s[0].TxnFenced(ctx, f1, []Cond{{Key: "k", Exists: true}}, []Op{Put("k", []byte("a"))}); err != nil || !ok {
		t.Fatalf("fenced write of the leader: %v %v", ok, err)
	}
	if ok, err := s[0].TxnFenced(ctx, f1, []Cond{{Key: "absent", Exists: true}}, []Op{Put("k", []byte("b"))}); err != nil || ok {
		t.Fatalf("fenced write with a failing condition: %v %v", ok, err)
	}
	// The first writer loses its lease; a second one wins. The deposed writer's fence fails.
	s1.Close()
	s2, f2 := elect(s[1])
	defer s2.Close()
	if f2.Epoch <= f1.Epoch {
		t.Fatalf("epochs did not grow: %d then %d", f1.Epoch, f2.Epoch)
	}
	fs := NewFencedStore(s[0], func() (Fence, bool) { return f1, true })
	_, err := fs.Txn(ctx, nil, []Op{Put("k", []byte("stale"))})
	if ferr.CodeOf(err) != ferr.NotCoordinatorLeaderException {
		t.Fatalf("deposed writer: err = %v, want NOT_COORDINATOR_LEADER", err)
	}
	if v, _ := s[2].Get(ctx, "k"); string(v) != "a" {
		t.Fatalf("k = %q after the deposed write, want a", v)
	}
	if ok, err := s[1].TxnFenced(ctx, f2, nil, []Op{Put("k", []byte("c"))}); err != nil || !ok {
		t.Fatalf("successor's write: %v %v", ok, err)
	}
}
