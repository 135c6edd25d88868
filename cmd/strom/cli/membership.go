package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

// Membership changes: server tags and rebalances (docs/cluster.md, "Membership changes").

func parseServerIDs(args []string) ([]int32, error) {
	ids := make([]int32, 0, len(args))
	for _, a := range args {
		n, err := strconv.ParseInt(a, 10, 32)
		if err != nil {
			return nil, usagef("%q is not a tablet server id", a)
		}
		ids = append(ids, int32(n))
	}
	return ids, nil
}

func parseServerTag(s string) (fluss.ServerTag, error) {
	switch strings.ToUpper(strings.ReplaceAll(s, "-", "_")) {
	case "PERMANENT_OFFLINE":
		return fluss.PermanentOffline, nil
	case "TEMPORARY_OFFLINE":
		return fluss.TemporaryOffline, nil
	}
	return 0, usagef("--tag %q: want permanent-offline or temporary-offline", s)
}

func parseGoal(s string) (fluss.RebalanceGoal, error) {
	switch strings.ToUpper(strings.ReplaceAll(s, "-", "_")) {
	case "REPLICA_DISTRIBUTION", "REPLICA":
		return fluss.ReplicaDistribution, nil
	case "LEADER_DISTRIBUTION", "LEADER":
		return fluss.LeaderDistribution, nil
	case "RACK_AWARE", "RACK":
		return fluss.RackAware, nil
	}
	return 0, usagef("--goal %q: want replica-distribution, leader-distribution or rack-aware", s)
}

func (a *app) clusterTagCommand() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "tag",
		Short: "Tag tablet servers that are leaving (PERMANENT_OFFLINE) or going away for a while (TEMPORARY_OFFLINE)",
		Example: `  strom cluster tag add 3
  strom cluster tag remove 3 --tag temporary-offline`,
	})
	for _, add := range []bool{true, false} {
		var tagName string
		use, short := "add SERVER_ID...", "Tag tablet servers; the next rebalance moves their replicas away"
		if !add {
			use, short = "remove SERVER_ID...", "Remove a tag from tablet servers"
		}
		sub := &cobra.Command{
			Use:   use,
			Short: short,
			Example: fmt.Sprintf(`  strom cluster tag %[1]s 3
  strom cluster tag %[1]s 3 4 --tag temporary-offline`, strings.Fields(use)[0]),
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				ids, err := parseServerIDs(args)
				if err != nil {
					return err
				}
				tag, err := parseServerTag(tagName)
				if err != nil {
					return err
				}
				ctx := cmd.Context()
				conn, err := a.connection(ctx)
				if err != nil {
					return err
				}
				verb := "tagged"
				if add {
					err = conn.Admin().AddServerTag(ctx, ids, tag)
				} else {
					verb = "untagged"
					err = conn.Admin().RemoveServerTag(ctx, ids, tag)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(a.io.Out, "%s %s %s\n", verb, plural(int64(len(ids)), "server", "servers")+" "+strings.Join(args, ", "), tag)
				return nil
			},
		}
		sub.Flags().StringVar(&tagName, "tag", "permanent-offline", "permanent-offline or temporary-offline")
		cmd.AddCommand(sub)
	}
	return cmd
}

func (a *app) clusterRebalanceCommand() *cobra.Command {
	var goals []string
	var wait bool
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Move replicas off tagged servers and even out replicas and leaders over the others",
		Long: `Plans and starts a rebalance and prints its id. Replicas on tagged servers move to
the live untagged ones; the goals (highest priority first) even out replicas and
leaderships. Follow it with 'strom cluster rebalance progress'.`,
		Example: `  strom cluster rebalance
  strom cluster rebalance --goal replica-distribution --wait
  strom cluster rebalance progress
  strom cluster rebalance cancel`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var gs []fluss.RebalanceGoal
			for _, g := range goals {
				goal, err := parseGoal(g)
				if err != nil {
					return err
				}
				gs = append(gs, goal)
			}
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			id, err := conn.Admin().Rebalance(ctx, gs...)
			if err != nil {
				return err
			}
			if !wait {
				fmt.Fprintf(a.io.Out, "rebalance %s started\n", id)
				return nil
			}
			for {
				p, err := conn.Admin().ListRebalanceProgress(ctx, id)
				if err != nil {
					return err
				}
				if p == nil || p.Status.Final() {
					return a.printProgress(p)
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().StringSliceVar(&goals, "goal", []string{"replica-distribution", "leader-distribution"}, "goals in priority order: replica-distribution, leader-distribution, rack-aware (repeatable)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the rebalance ends and print its progress")
	cmd.AddCommand(&cobra.Command{
		Use:   "progress [REBALANCE_ID]",
		Short: "Show the current or last rebalance, bucket by bucket",
		Example: `  strom cluster rebalance progress
  strom cluster rebalance progress --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			p, err := conn.Admin().ListRebalanceProgress(ctx, strings.Join(args, ""))
			if err != nil {
				return err
			}
			return a.printProgress(p)
		},
	}, &cobra.Command{
		Use:     "cancel [REBALANCE_ID]",
		Short:   "Cancel the current rebalance: moves not yet started are dropped",
		Example: `  strom cluster rebalance cancel`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			if err := conn.Admin().CancelRebalance(ctx, strings.Join(args, "")); err != nil {
				return err
			}
			fmt.Fprintln(a.io.Out, "rebalance canceled")
			return nil
		},
	})
	return cmd
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = itoa(id)
	}
	return strings.Join(s, ",")
}

func (a *app) printProgress(p *fluss.RebalanceProgress) error {
	type moveJSON struct {
		TableID     int64   `json:"table_id"`
		PartitionID *int64  `json:"partition_id,omitempty"`
		Bucket      int32   `json:"bucket"`
		FromLeader  int32   `json:"original_leader"`
		ToLeader    int32   `json:"new_leader"`
		From        []int32 `json:"original_replicas"`
		To          []int32 `json:"new_replicas"`
		Status      string  `json:"status"`
	}
	type progressJSON struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Done   float64    `json:"done"`
		Moves  []moveJSON `json:"moves"`
	}
	if p == nil {
		if a.json {
			return printJSON(a.io.Out, nil)
		}
		fmt.Fprintln(a.io.Out, "no rebalance")
		return nil
	}
	out := progressJSON{ID: p.ID, Status: p.Status.String(), Done: p.Done(), Moves: []moveJSON{}}
	for _, m := range p.Moves {
		mj := moveJSON{TableID: m.Bucket.TableID, Bucket: m.Bucket.Bucket, FromLeader: m.OriginalLeader, ToLeader: m.NewLeader,
			From: m.OriginalReplicas, To: m.NewReplicas, Status: m.Status.String()}
		if m.Bucket.PartitionID != fluss.NoPartition {
			pid := m.Bucket.PartitionID
			mj.PartitionID = &pid
		}
		out.Moves = append(out.Moves, mj)
	}
	if a.json {
		return printJSON(a.io.Out, out)
	}
	fmt.Fprintf(a.io.Out, "rebalance %s: %s, %d of %d moves done\n", p.ID, out.Status, int(p.Done()*float64(len(p.Moves))+0.5), len(p.Moves))
	if len(p.Moves) == 0 {
		return nil
	}
	var rows [][]string
	for _, m := range out.Moves {
		part := "-"
		if m.PartitionID != nil {
			part = itoa(*m.PartitionID)
		}
		rows = append(rows, []string{itoa(m.TableID), part, itoa(m.Bucket), joinIDs(m.From), joinIDs(m.To), itoa(m.FromLeader) + "→" + itoa(m.ToLeader), m.Status})
	}
	a.io.Out.Write([]byte("\n"))
	return printTable(a.io.Out, []string{"TABLE ID", "PARTITION", "BUCKET", "REPLICAS", "NEW REPLICAS", "LEADER", "STATUS"}, rows)
}
