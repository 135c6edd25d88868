package cli

import (
	"github.com/spf13/cobra"

	"github.com/stromdb/strom/fluss"
)

func (a *app) clusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the cluster's servers, the buckets each leads, and the buckets of its tables; health, tags, rebalance",
		Example: `  strom cluster
  strom cluster --json
  strom cluster health
  strom cluster tag add 3
  strom cluster rebalance --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conn, err := a.connection(ctx)
			if err != nil {
				return err
			}
			admin := conn.Admin()
			nodes, err := admin.GetServerNodes(ctx)
			if err != nil {
				return err
			}
			type serverJSON struct {
				ID      int32  `json:"id"`
				Type    string `json:"type"`
				Address string `json:"address"`
				// Leads is the number of buckets a tablet server leads.
				Leads *int64 `json:"leader_buckets,omitempty"`
			}
			type tableJSON struct {
				Table      string `json:"table"`
				Buckets    int32  `json:"buckets"`
				Partitions int    `json:"partitions,omitempty"`
				Total      int64  `json:"total_buckets"`
			}
			out := struct {
				Servers      []serverJSON `json:"servers"`
				Tables       []tableJSON  `json:"tables"`
				TotalBuckets int64        `json:"total_buckets"`
			}{Servers: []serverJSON{}, Tables: []tableJSON{}}
			leads := map[int32]*int64{} // tablet server id -> buckets led
			for _, n := range nodes {
				sj := serverJSON{ID: n.ID, Type: string(n.Type), Address: n.Addr()}
				if n.Type == fluss.TabletServer {
					sj.Leads = new(int64)
					leads[n.ID] = sj.Leads
				}
				out.Servers = append(out.Servers, sj)
			}
			countLeaders := func(path fluss.TablePath, partition string) error {
				byBucket, err := admin.BucketLeaders(ctx, path, partition)
				if err != nil {
					return err
				}
				for _, n := range byBucket {
					if c := leads[n.ID]; c != nil {
						*c++
					}
				}
				return nil
			}
			dbs, err := admin.ListDatabases(ctx)
			if err != nil {
				return err
			}
			sortStrings(dbs)
			for _, db := range dbs {
				names, err := admin.ListTables(ctx, db)
				if err != nil {
					return err
				}
				sortStrings(names)
				for _, name := range names {
					path := fluss.NewTablePath(db, name)
					info, err := admin.GetTableInfo(ctx, path)
					if err != nil {
						return err
					}
					t := tableJSON{Table: path.String(), Buckets: info.NumBuckets(), Total: int64(info.NumBuckets())}
					if info.IsPartitioned() {
						parts, err := admin.ListPartitionInfos(ctx, path, nil)
						if err != nil {
							return err
						}
						t.Partitions = len(parts)
						t.Total = int64(len(parts)) * int64(info.NumBuckets())
						for _, p := range parts {
							if err := countLeaders(path, p.Name); err != nil {
								return err
							}
						}
					} else if err := countLeaders(path, ""); err != nil {
						return err
					}
					out.Tables = append(out.Tables, t)
					out.TotalBuckets += t.Total
				}
			}
			if a.json {
				return printJSON(a.io.Out, out)
			}
			var rows [][]string
			for _, s := range out.Servers {
				led := "-"
				if s.Leads != nil {
					led = itoa(*s.Leads)
				}
				rows = append(rows, []string{itoa(s.ID), s.Type, s.Address, led})
			}
			if err := printTable(a.io.Out, []string{"SERVER", "TYPE", "ADDRESS", "LEADS"}, rows); err != nil {
				return err
			}
			a.io.Out.Write([]byte("\n"))
			rows = rows[:0]
			for _, t := range out.Tables {
				parts := "-"
				if t.Partitions > 0 {
					parts = itoa(t.Partitions)
				}
				rows = append(rows, []string{t.Table, itoa(t.Buckets), parts, itoa(t.Total)})
			}
			rows = append(rows, []string{"total", "", "", itoa(out.TotalBuckets)})
			return printTable(a.io.Out, []string{"TABLE", "BUCKETS", "PARTITIONS", "TOTAL BUCKETS"}, rows)
		},
	}
	cmd.AddCommand(a.clusterHealthCommand(), a.clusterTagCommand(), a.clusterRebalanceCommand())
	return cmd
}
