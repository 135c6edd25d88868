package compare

import (
	"time"

	"github.com/stromdb/strom/cmd/strom/bench"
)

// Metric keys of the servers' CPU time, read from /proc for the server's processes (Fluss:
// ZooKeeper, coordinator and tablet server JVMs; Strom: one process) right before and right
// after each timed section. Per-unit keys divide it by the work of the section, so they stay
// comparable when a section was cut short or the rates differ: "go.<mode>.<KeyCPUPerMRows>"
// for row workloads, "go.<mode>.<KeyCPUPerKLookups>" for lookups.
const (
	KeyServerCPU      = "server_cpu_s"                // suffix: CPU seconds over one section
	KeyCPUPerMRows    = "server_cpu_s_per_1m_rows"    // suffix: … per million rows written or read
	KeyCPUPerKLookups = "server_cpu_s_per_1k_lookups" // suffix: … per thousand keys (ids) looked up

	KeyPyServerCPUPerMRows = "py.server_cpu_s_per_1m_rows" // the whole pyfluss workload per million rows it moved
	KeyRoundServerCPU      = "server.cpu_s"                // every process of the server, from launch to the end of the round
)

// cpuRows head the ratio table: what a server costs per unit of work, the figure an operator
// pays for, which (unlike rows/s on a machine the client shares) does not depend on how much
// CPU the client left. The goal is issue 26's: at most a third of Fluss's.
var cpuRows = []MetricDef{
	{Key: "go.append." + KeyCPUPerMRows, Label: "append: server CPU s per 1M rows", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.scan." + KeyCPUPerMRows, Label: "scan: server CPU s per 1M rows", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.upsert." + KeyCPUPerMRows, Label: "upsert (new keys): server CPU s per 1M rows", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.update." + KeyCPUPerMRows, Label: "update: server CPU s per 1M rows", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.partial-update." + KeyCPUPerMRows, Label: "partial update: server CPU s per 1M rows", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.lookup." + KeyCPUPerKLookups, Label: "lookup: server CPU s per 1k lookups", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.prefix-lookup." + KeyCPUPerKLookups, Label: "prefix lookup: server CPU s per 1k lookups", Unit: "cpu", GoalRatio: 1.0 / 3},
	{Key: "go.mixed." + KeyCPUPerMRows, Label: "mixed: server CPU s per 1M rows updated (lookups included)", Unit: "cpu"},
	{Key: KeyPyServerCPUPerMRows, Label: "pyfluss append+scan+upsert: server CPU s per 1M rows", Unit: "cpu"},
	{Key: KeyRoundServerCPU, Label: "server CPU s, whole round (start-up and every workload)", Unit: "s"},
}

// addServerCPU records a result's server CPU time and its per-unit figure as
// go.<mode>.<key> metrics; nothing when the server's CPU was not measured.
func addServerCPU(m map[string]float64, r bench.Result) {
	if r.ServerCPUSeconds <= 0 {
		return
	}
	p := "go." + string(r.Mode) + "."
	m[p+KeyServerCPU] = r.ServerCPUSeconds
	switch r.Mode {
	case bench.ModeLookup: // Rows are the keys looked up
		if r.Rows > 0 {
			m[p+KeyCPUPerKLookups] = r.ServerCPUSeconds / float64(r.Rows) * 1e3
		}
	case bench.ModePrefixLookup: // Rows are the rows returned; each request asks LookupBatch ids
		if ids := r.Requests * int64(max(r.LookupBatch, 1)); ids > 0 {
			m[p+KeyCPUPerKLookups] = r.ServerCPUSeconds / float64(ids) * 1e3
		}
	default: // mixed: Rows are the rows written
		if r.Rows > 0 {
			m[p+KeyCPUPerMRows] = r.ServerCPUSeconds / float64(r.Rows) * 1e6
		}
	}
}

// cpuReading is the server's CPU time so far, or a failure to read it.
type cpuReading struct {
	at  time.Duration
	err error
}

func readCPU(g *group) cpuReading {
	at, err := g.cpu()
	return cpuReading{at, err}
}

// since returns the CPU time between r and a later reading, and whether both succeeded.
func (r cpuReading) since(later cpuReading) (time.Duration, bool) {
	if r.err != nil || later.err != nil || later.at < r.at {
		return 0, false
	}
	return later.at - r.at, true
}
