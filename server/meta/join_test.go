package meta

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// A member whose disk is lost comes back with an empty etcd directory. Started as before it
// cannot run (etcd refuses or raft panics); with etcd.join-endpoints it replaces its dead
// registration, joins, and sees the cluster's data. A member whose namesake still runs is
// refused, and one that still has its data starts as a plain restart.
func TestLostMemberDiskRejoinsThroughJoinEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stores, members, dirs := startMembersIn(t, 3)
	if ok, err := stores[0].Txn(ctx, nil, []Op{Put("before", []byte("v"))}); err != nil || !ok {
		t.Fatalf("put: %v %v", ok, err)
	}
	join := []string{members[0].AdvertiseClientURLs[0].String(), members[1].AdvertiseClientURLs[0].String()}

	// While member 2 runs, a process with its name and no data is refused.
	imposter := members[2]
	imposter.JoinEndpoints = join
	if s, err := OpenMember(ctx, t.TempDir(), imposter, log); err == nil || !strings.Contains(err.Error(), "is running") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("joining over a running member: %v, want a refusal", err)
	}

	// Member 2 dies and loses its disk.
	stores[2].Close()
	if err := os.RemoveAll(dirs[2]); err != nil {
		t.Fatal(err)
	}
	if ok, err := stores[0].Txn(ctx, nil, []Op{Put("while-down", []byte("v"))}); err != nil || !ok {
		t.Fatalf("put with a member down: %v %v", ok, err)
	}
	back := members[2]
	back.JoinEndpoints = join
	s, err := OpenMember(ctx, dirs[2], back, log)
	if err != nil {
		t.Fatalf("rejoin with an empty directory: %v", err)
	}
	for _, k := range []string{"before", "while-down"} {
		if v, err := s.Get(ctx, k); err != nil || string(v) != "v" {
			t.Fatalf("%s on the rejoined member: %q %v", k, v, err)
		}
	}
	list, err := s.Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Fatalf("the cluster has %d members after the rejoin, want 3: %v", len(list.Members), list.Members)
	}

	// With its data in place, the same options are a plain restart: no membership change.
	s.Close()
	s, err = OpenMember(ctx, dirs[2], back, log)
	if err != nil {
		t.Fatalf("restart with data: %v", err)
	}
	defer s.Close()
	again, err := s.Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Members) != 3 || again.Header.MemberId != list.Header.MemberId {
		t.Fatalf("a restart with data changed the membership: %v (member %x), before %v (member %x)", again.Members, again.Header.MemberId, list.Members, list.Header.MemberId)
	}
}
