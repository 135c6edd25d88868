package assign

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/internal/statetext"
)

// TestDecisions runs the scenarios of testdata/ (statetext notation; go test -rewrite
// writes the expected output, which is then checked by hand against docs/cluster.md):
//
//	elect live=IDS epoch=N          each input state after the failover rules (Elect)
//	place servers=IDS [racks=(ID:RACK,...)] table=N [partition=N] buckets=N rf=N epoch=N
//	                                the states Place gives, each server's rack from racks
//	change-isr isr=IDS leader=N le=N be=N   each input state after the ISR change its
//	                                        leader at those epochs asks for (ChangeISR)
func TestDecisions(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range td.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			ids := func(k string) []int32 {
				v, err := statetext.ParseIDs(args[k])
				if err != nil {
					td.Fatalf(t, "%s: %v", k, err)
				}
				return v
			}
			num := func(k string) int64 {
				var v int64
				if _, err := fmt.Sscan(args[k], &v); err != nil {
					td.Fatalf(t, "%s: %v", k, err)
				}
				return v
			}
			states, err := statetext.ParseStates(td.Input)
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			var out strings.Builder
			switch td.Cmd {
			case "elect":
				live := statetext.Live(ids("live"))
				for _, b := range statetext.Buckets(states) {
					next, changed := Elect(states[b], live, num("epoch"))
					if !changed {
						fmt.Fprintf(&out, "%s unchanged\n", statetext.FormatBucket(b))
						continue
					}
					checkInvariants(t, td, b, states[b], next)
					out.WriteString(statetext.FormatState(b, next) + "\n")
				}
			case "place":
				partition := cluster.NoPartition
				if _, ok := args["partition"]; ok {
					partition = num("partition")
				}
				racks := map[int32]string{}
				for _, a := range td.CmdArgs {
					if a.Key != "racks" {
						continue
					}
					for _, v := range a.Vals {
						id, rack, ok := strings.Cut(v, ":")
						var n int32
						if _, err := fmt.Sscan(id, &n); !ok || err != nil {
							td.Fatalf(t, "racks: %q is not ID:RACK", v)
						}
						racks[n] = rack
					}
				}
				placed, err := Place(ids("servers"), racks, num("table"), partition, int32(num("buckets")), int32(num("rf")), num("epoch"))
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				checkRackSpread(t, td, placed, racks)
				out.WriteString(statetext.FormatStates(placed))
			case "change-isr":
				_, expect, err := statetext.ParseState(fmt.Sprintf("0/-/0 l=%s le=%s be=%s", args["leader"], args["le"], args["be"]))
				if err != nil {
					td.Fatalf(t, "the expected state: %v", err)
				}
				for _, b := range statetext.Buckets(states) {
					next, err := ChangeISR(b, states[b], expect, ids("isr"))
					if err != nil {
						fmt.Fprintf(&out, "%s error: %v\n", statetext.FormatBucket(b), err)
						continue
					}
					out.WriteString(statetext.FormatState(b, next) + "\n")
				}
			default:
				td.Fatalf(t, "unknown command %q", td.Cmd)
			}
			return out.String()
		})
	})
}

// checkInvariants fails on an elected state that breaks cluster.BucketState's invariants:
// the leader is in the ISR, the ISR within the replicas, and the epochs move as documented.
func checkInvariants(t *testing.T, td *datadriven.TestData, b cluster.Bucket, prev, next cluster.BucketState) {
	if next.Leader != cluster.NoLeader && !next.InISR(next.Leader) {
		td.Fatalf(t, "%s: leader %d outside the ISR %v", b, next.Leader, next.ISR)
	}
	for _, id := range next.ISR {
		if !next.IsReplica(id) {
			td.Fatalf(t, "%s: ISR member %d is no replica", b, id)
		}
	}
	if next.Leader != prev.Leader && (next.LeaderEpoch != prev.LeaderEpoch+1 || next.BucketEpoch != prev.BucketEpoch+1) {
		td.Fatalf(t, "%s: a leader change without both epochs incremented", b)
	}
	if next.Leader == prev.Leader && (next.LeaderEpoch != prev.LeaderEpoch || next.BucketEpoch != prev.BucketEpoch+1) {
		td.Fatalf(t, "%s: an ISR-only change must increment the bucket epoch only", b)
	}
}

// checkRackSpread fails on a placement over racks where a bucket's replicas cover fewer than
// min(rf, racks) racks: Place must give every rack a replica before any rack a second.
func checkRackSpread(t *testing.T, td *datadriven.TestData, placed map[cluster.Bucket]cluster.BucketState, racks map[int32]string) {
	all := map[string]bool{}
	for _, r := range racks {
		all[r] = true
	}
	if len(all) == 0 {
		return
	}
	for b, st := range placed {
		covered := map[string]bool{}
		for _, id := range st.Replicas {
			covered[racks[id]] = true
		}
		if want := min(len(st.Replicas), len(all)); len(covered) != want {
			td.Fatalf(t, "%s: replicas %v cover %d racks, want %d", b, st.Replicas, len(covered), want)
		}
	}
}
