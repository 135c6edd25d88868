package rebalance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/server/cluster"
	"github.com/stromdb/strom/server/control/internal/statetext"
)

func TestPlacementServers(t *testing.T) {
	for _, tc := range []struct {
		tags map[int32]ServerTag
		want []int32
	}{
		{nil, []int32{1, 2, 3}},
		{map[int32]ServerTag{2: TagPermanentOffline}, []int32{1, 3}},
		{map[int32]ServerTag{2: TagTemporaryOffline}, []int32{1, 2, 3}}, // as Fluss: only PERMANENT_OFFLINE is excluded
		{map[int32]ServerTag{9: TagPermanentOffline}, []int32{1, 2, 3}},
	} {
		live := []int32{1, 2, 3}
		if got := PlacementServers(live, tc.tags); !slices.Equal(got, tc.want) {
			t.Errorf("tags %v: %v, want %v", tc.tags, got, tc.want)
		}
		if !slices.Equal(live, []int32{1, 2, 3}) {
			t.Fatal("PlacementServers changed its argument")
		}
	}
}

func TestTags(t *testing.T) {
	known := func(id int32) bool { return id != 9 }
	tags := map[int32]ServerTag{1: TagTemporaryOffline}
	for _, tc := range []struct {
		name string
		add  bool
		ids  []int32
		tag  ServerTag
		want map[int32]ServerTag
		code ferr.Code
	}{
		{"add", true, []int32{2, 3}, TagPermanentOffline, map[int32]ServerTag{1: TagTemporaryOffline, 2: TagPermanentOffline, 3: TagPermanentOffline}, ferr.None},
		{"the same tag again", true, []int32{1}, TagTemporaryOffline, tags, ferr.None},
		{"another tag", true, []int32{2, 1}, TagPermanentOffline, nil, ferr.SeverTagAlreadyExistException},
		{"an unknown server: none tagged", true, []int32{2, 9}, TagPermanentOffline, nil, ferr.ServerNotExistException},
		{"remove", false, []int32{1}, TagTemporaryOffline, map[int32]ServerTag{}, ferr.None},
		{"remove from an untagged or unknown server", false, []int32{4, 9}, TagTemporaryOffline, tags, ferr.None},
		{"remove another tag", false, []int32{1}, TagPermanentOffline, nil, ferr.SeverTagNotExistException},
	} {
		var got map[int32]ServerTag
		var err error
		if tc.add {
			got, err = AddTags(tags, tc.ids, tc.tag, known)
		} else {
			got, err = RemoveTags(tags, tc.ids, tc.tag)
		}
		if ferr.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			continue
		}
		if err == nil && !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if !maps.Equal(tags, map[int32]ServerTag{1: TagTemporaryOffline}) {
		t.Fatalf("the tags given were modified: %v", tags)
	}
	if got, _ := AddTags(nil, []int32{1}, TagPermanentOffline, known); got[1] != TagPermanentOffline {
		t.Fatalf("tagging with no tags yet: %v", got)
	}
}

func moves(statuses ...Status) []Move {
	out := make([]Move, len(statuses))
	for i, s := range statuses {
		out[i] = Move{Bucket: cluster.Bucket{TableID: 1, Bucket: int32(i)}, Status: s}
	}
	return out
}

func TestCancel(t *testing.T) {
	r := &Record{Status: StatusRebalancing, Moves: moves(StatusCompleted, StatusRebalancing, StatusNotStarted)}
	if running := Cancel(r); !running || r.Status != StatusRebalancing || r.Moves[2].Status != StatusCanceled || r.Moves[1].Status != StatusRebalancing {
		t.Fatalf("cancel with a move running: %v %+v", running, r)
	}
	r = &Record{Status: StatusNotStarted, Moves: moves(StatusNotStarted, StatusNotStarted)}
	if running := Cancel(r); running || r.Status != StatusCanceled || r.Moves[0].Status != StatusCanceled {
		t.Fatalf("cancel before any move started: %v %+v", running, r)
	}
	r = &Record{Status: StatusCompleted, Moves: moves(StatusCompleted)}
	if Cancel(r); r.Status != StatusCompleted {
		t.Fatalf("a final rebalance changed: %+v", r)
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		moves []Move
		want  Status
		ended bool
	}{
		{moves(), StatusCompleted, true},
		{moves(StatusCompleted, StatusCompleted), StatusCompleted, true},
		{moves(StatusCompleted, StatusTimeout), StatusFailed, true},
		{moves(StatusFailed, StatusCompleted), StatusFailed, true},
		{moves(StatusFailed, StatusCanceled), StatusCanceled, true},
		{moves(StatusCompleted, StatusRebalancing), StatusRebalancing, false},
		{moves(StatusCanceled, StatusNotStarted), StatusRebalancing, false},
	} {
		got, ended := Outcome(tc.moves)
		if got != tc.want || ended != tc.ended {
			t.Errorf("Outcome(%v) = %s %v, want %s %v", tc.moves, got, ended, tc.want, tc.ended)
		}
	}
}

func TestAdmit(t *testing.T) {
	led := cluster.BucketState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}
	leaderless := cluster.BucketState{Replicas: []int32{1, 2}, Leader: cluster.NoLeader, ISR: []int32{1}}
	live := statetext.Live([]int32{1, 2})
	for _, tc := range []struct {
		name   string
		st     cluster.BucketState
		ok     bool
		live   func(int32) bool
		held   time.Duration
		want   Admission
		status Status
	}{
		{"a led bucket starts", led, true, live, 0, Start, StatusRebalancing},
		{"a dropped bucket is refused", led, false, live, 0, Refuse, StatusFailed},
		{"no leader: held", leaderless, true, live, time.Minute, Hold, StatusNotStarted},
		{"a dead leader: held", led, true, statetext.Live([]int32{2}), 0, Hold, StatusNotStarted},
		{"held beyond the timeout: refused TIMEOUT", leaderless, true, live, 3 * time.Minute, Refuse, StatusTimeout},
	} {
		got, status, reason := Admit(tc.st, tc.ok, tc.live, tc.held, 2*time.Minute)
		if got != tc.want || status != tc.status || (got != Start) != (reason != "") {
			t.Errorf("%s: %v %s %q", tc.name, got, status, reason)
		}
	}
}

// TestScenarios runs testdata/step and testdata/plan (statetext notation; go test -rewrite
// writes the expected output, then checked by hand against docs/cluster.md):
//
//	step new=IDS leader=ID original=IDS live=IDS [timed-out]
//	    each input state: the move's next step (Step)
//	plan live=IDS [racks=(ID:RACK,...)] [tags=ID:TAG,...] goals=GOAL,...
//	    the input states: the moves Plan makes, and the load per server after them (with
//	    racks, also the racks each bucket covers after them)
func TestScenarios(t *testing.T) {
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
			states, err := statetext.ParseStates(td.Input)
			if err != nil {
				td.Fatalf(t, "%v", err)
			}
			var out strings.Builder
			switch td.Cmd {
			case "step":
				var leader int32
				fmt.Sscan(args["leader"], &leader)
				_, timedOut := args["timed-out"]
				for _, b := range statetext.Buckets(states) {
					m := Move{Bucket: b, NewReplicas: ids("new"), NewLeader: leader, OriginalReplicas: ids("original"), Status: StatusRebalancing}
					res := Step(m, states[b], statetext.Live(ids("live")), timedOut)
					fmt.Fprintf(&out, "%s %s", stepNames[res.Kind], res.Status)
					if res.Reason != "" {
						fmt.Fprintf(&out, " (%s)", res.Reason)
					}
					if res.Write {
						fmt.Fprintf(&out, ": %s", statetext.FormatState(b, res.Next))
					}
					out.WriteString("\n")
				}
			case "plan":
				tags := map[int32]ServerTag{}
				if v := args["tags"]; v != "" {
					for _, f := range strings.Split(v, ",") {
						var id int32
						var tag string
						if _, err := fmt.Sscanf(strings.Replace(f, ":", " ", 1), "%d %s", &id, &tag); err != nil {
							td.Fatalf(t, "tag %q: %v", f, err)
						}
						tags[id] = map[string]ServerTag{"permanent": TagPermanentOffline, "temporary": TagTemporaryOffline}[tag]
					}
				}
				var goals []Goal
				for _, g := range strings.Split(args["goals"], ",") {
					switch g {
					case "replicas":
						goals = append(goals, GoalReplicaDistribution)
					case "leaders":
						goals = append(goals, GoalLeaderDistribution)
					case "rack":
						goals = append(goals, GoalRackAware)
					case "":
					default:
						td.Fatalf(t, "goal %q", g)
					}
				}
				racks := map[int32]string{}
				if v := args["racks"]; v != "" {
					for _, f := range strings.Split(v, ",") {
						id, rack, ok := strings.Cut(f, ":")
						var n int32
						if _, err := fmt.Sscan(id, &n); !ok || err != nil {
							td.Fatalf(t, "racks: %q is not ID:RACK", f)
						}
						racks[n] = rack
					}
				}
				planned, err := Plan(states, ids("live"), racks, tags, goals)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				after := maps.Clone(states)
				for _, m := range planned {
					fmt.Fprintf(&out, "move %s %s -> %s leader %d -> %d\n", statetext.FormatBucket(m.Bucket),
						statetext.FormatIDs(m.OriginalReplicas), statetext.FormatIDs(m.NewReplicas), m.OriginalLeader, m.NewLeader)
					if m.NewReplicas[0] != m.NewLeader || m.Status != StatusNotStarted {
						td.Fatalf(t, "move %+v: the new leader is not first, or the move is not NOT_STARTED", m)
					}
					if len(racks) > 0 && rackCount(racks, m.NewReplicas) < rackCount(racks, m.OriginalReplicas) {
						td.Fatalf(t, "move %+v lowers the racks the bucket covers", m)
					}
					after[m.Bucket] = cluster.BucketState{Replicas: m.NewReplicas, Leader: m.NewLeader}
				}
				replicas, leaders := map[int32]int{}, map[int32]int{}
				for _, st := range after {
					for _, r := range st.Replicas {
						replicas[r]++
					}
					leaders[st.Leader]++
				}
				for _, id := range slices.Sorted(maps.Keys(replicas)) {
					fmt.Fprintf(&out, "server %d: %d replicas, %d leaders\n", id, replicas[id], leaders[id])
				}
				if len(racks) > 0 {
					for _, b := range statetext.Buckets(after) {
						fmt.Fprintf(&out, "%s covers %d racks\n", statetext.FormatBucket(b), rackCount(racks, after[b].Replicas))
					}
				}
			default:
				td.Fatalf(t, "unknown command %q", td.Cmd)
			}
			return out.String()
		})
	})
}

var stepNames = map[StepKind]string{Wait: "wait", AddReplicas: "add", Switch: "switch", SwitchLeader: "switch-leader", RollBack: "roll-back", Done: "done"}

// rackCount is the number of racks replicas cover (a server without a rack counts as rack "").
func rackCount(racks map[int32]string, replicas []int32) int {
	covered := map[string]bool{}
	for _, r := range replicas {
		covered[racks[r]] = true
	}
	return len(covered)
}
