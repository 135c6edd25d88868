package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

// healthJSON is `strom cluster health --json`.
type healthJSON struct {
	Status          string       `json:"status"`
	Servers         []serverNode `json:"servers"`
	Buckets         int32        `json:"buckets"`
	OfflineBuckets  int32        `json:"offline_buckets"`
	Replicas        int32        `json:"replicas"`
	InSyncReplicas  int32        `json:"in_sync_replicas"`
	UnderReplicated int32        `json:"under_replicated_replicas"`
}

type serverNode struct {
	ID      int32  `json:"id"`
	Type    string `json:"type"`
	Address string `json:"address"`
}

func (a *app) clusterHealthCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Show the cluster's health: status, servers, offline buckets, under-replicated replicas",
		Long: `Show what the coordinator answers to GET_CLUSTER_HEALTH, with the live servers:

  GREEN   every bucket has a live leader and every replica is in sync
  YELLOW  every bucket has a live leader; some replicas are out of sync (under-replicated)
  RED     some buckets have no live leader (offline): they refuse reads and writes

It exits 0 when the cluster is GREEN and 1 otherwise (the report is printed either way), so
scripts can wait for it: until strom cluster health >/dev/null; do sleep 1; done.
GET_CLUSTER_HEALTH is a Fluss 1.0 API; Apache Fluss 0.9 does not answer it.`,
		Example: `  strom cluster health
  strom cluster health --json
  until strom cluster health > /dev/null; do sleep 1; done`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			admin := conn.Admin()
			h, err := admin.GetClusterHealth(ctx)
			if fluss.CodeOf(err) == fluss.ErrUnsupportedVersion {
				return fmt.Errorf("the server does not answer GET_CLUSTER_HEALTH (a Fluss 1.0 API; 'strom cluster' shows the servers and buckets): %w", err)
			}
			if err != nil {
				return err
			}
			nodes, err := admin.GetServerNodes(ctx)
			if err != nil {
				return err
			}
			out := healthJSON{Status: h.Status.String(), Servers: []serverNode{}, Buckets: h.LeaderReplicas,
				OfflineBuckets: h.OfflineBuckets(), Replicas: h.Replicas, InSyncReplicas: h.InSyncReplicas,
				UnderReplicated: h.UnderReplicated()}
			coordinators, tablets := 0, 0
			for _, n := range nodes {
				out.Servers = append(out.Servers, serverNode{ID: n.ID, Type: string(n.Type), Address: n.Addr()})
				if n.Type == fluss.TabletServer {
					tablets++
				} else {
					coordinators++
				}
			}
			slices.SortFunc(out.Servers, func(x, y serverNode) int {
				if x.Type != y.Type {
					return strings.Compare(x.Type, y.Type)
				}
				return int(x.ID - y.ID)
			})
			if a.json {
				err = printJSON(a.io.Out, out)
			} else {
				err = printHealth(a, out, coordinators, tablets)
			}
			if err != nil {
				return err
			}
			if h.Status != fluss.HealthGreen {
				return fmt.Errorf("the cluster is %s: %d offline %s, %d under-replicated %s", out.Status,
					out.OfflineBuckets, plural(int64(out.OfflineBuckets), "bucket", "buckets"),
					out.UnderReplicated, plural(int64(out.UnderReplicated), "replica", "replicas"))
			}
			return nil
		},
	}
}

func printHealth(a *app, h healthJSON, coordinators, tablets int) error {
	kv := [][]string{
		{"Status:", h.Status},
		{"Servers:", fmt.Sprintf("%d %s, %d tablet %s", coordinators, plural(int64(coordinators), "coordinator", "coordinators"),
			tablets, plural(int64(tablets), "server", "servers"))},
		{"Buckets:", fmt.Sprintf("%d (%d offline)", h.Buckets, h.OfflineBuckets)},
		{"Replicas:", fmt.Sprintf("%d (%d in sync, %d under-replicated)", h.Replicas, h.InSyncReplicas, h.UnderReplicated)},
	}
	if err := printKV(a.io.Out, kv); err != nil {
		return err
	}
	fmt.Fprintln(a.io.Out)
	rows := make([][]string, len(h.Servers))
	for i, s := range h.Servers {
		rows[i] = []string{itoa(s.ID), s.Type, s.Address}
	}
	return printTable(a.io.Out, []string{"SERVER", "TYPE", "ADDRESS"}, rows)
}
