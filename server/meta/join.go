package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// A member that starts with an empty etcd directory cannot bootstrap again under the name it
// had: the cluster remembers that member's raft state, and a member with an empty log under a
// known id makes raft panic ("tocommit out of range") or etcd refuse ("has already been
// bootstrapped"). etcd's own procedure for a lost member disk is to remove the member and add
// it anew. joinCluster does exactly that, through the running members' client URLs
// (etcd.join-endpoints), and only for a member without any etcd data of its own, so a member
// that still has its data never leaves and rejoins the cluster.

// joinTimeout bounds the membership changes of a join.
const joinTimeout = 30 * time.Second

// hasMemberData reports whether dir holds the data of an etcd member (etcd keeps its raft log
// and state under dir/member).
func hasMemberData(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "member"))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("inspect etcd directory: %w", err)
}

// joinCluster registers m with the etcd cluster reachable at m.JoinEndpoints and returns the
// initial-cluster string to start the member with (state "existing"). A registration of the
// same name or peer URLs is removed first, provided that member is not running: a live member
// is never replaced.
func joinCluster(ctx context.Context, m Member, log *slog.Logger) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	tc, err := clientTLS(m.ClientTLS)
	if err != nil {
		return "", err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: m.JoinEndpoints, DialTimeout: 5 * time.Second, Context: ctx, Logger: zap.NewNop(), TLS: tc})
	if err != nil {
		return "", fmt.Errorf("connect to etcd.join-endpoints %v: %w", m.JoinEndpoints, err)
	}
	defer cli.Close()
	peers := urlStrings(m.AdvertisePeerURLs)
	list, err := cli.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("list the etcd members at %v: %w", m.JoinEndpoints, err)
	}
	for _, old := range list.Members {
		samePeer := slices.ContainsFunc(old.PeerURLs, func(u string) bool { return slices.Contains(peers, u) })
		if old.Name != m.Name && !samePeer {
			continue
		}
		if running(ctx, cli, old.ClientURLs) {
			return "", fmt.Errorf("etcd member %q (id %x, peers %v) is running: this process has no etcd data in its directory and would replace it; stop that member first, or give this one another etcd.name and peer URL", old.Name, old.ID, old.PeerURLs)
		}
		log.Warn("removing the dead registration of this etcd member before joining again", "name", old.Name, "id", fmt.Sprintf("%x", old.ID), "peers", old.PeerURLs)
		if _, err := cli.MemberRemove(ctx, old.ID); err != nil {
			return "", fmt.Errorf("remove the dead etcd member %q (id %x): %w", old.Name, old.ID, err)
		}
	}
	// etcd refuses to add a member ("unhealthy cluster") until its leader has been connected
	// to a quorum for a few seconds, as right after a start or a removal: retry until then.
	var added *clientv3.MemberAddResponse
	for {
		added, err = cli.MemberAdd(ctx, peers)
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrUnhealthy) || ctx.Err() != nil {
			return "", fmt.Errorf("add this etcd member (peers %v): %w", peers, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("add this etcd member (peers %v): %w", peers, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	var initial []string
	for _, mem := range added.Members {
		name := mem.Name
		if mem.ID == added.Member.ID {
			name = m.Name // a member added but not yet started has no name
		}
		for _, u := range mem.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	log.Info("added this etcd member to the cluster", "name", m.Name, "id", fmt.Sprintf("%x", added.Member.ID), "initial_cluster", strings.Join(initial, ","))
	return strings.Join(initial, ","), nil
}

// running reports whether a member answers on any of its client URLs.
func running(ctx context.Context, cli *clientv3.Client, clientURLs []string) bool {
	for _, u := range clientURLs {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cli.Status(sctx, u)
		cancel()
		if err == nil {
			return true
		}
	}
	return false
}

func urlStrings(us []url.URL) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}
