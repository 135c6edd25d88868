// Package compare runs the side-by-side benchmark of Strom against Apache Fluss: it starts
// a fresh single-node server of each system per round on loopback (Fluss as three JVMs —
// ZooKeeper, coordinator, tablet server — from released jars; Strom as one process),
// measures cold start, runs the `strom bench` workloads (package bench) and the pyfluss
// workload against it, reads the servers' CPU time around each workload and their RSS after
// them, stops them, and renders the medians of the interleaved rounds as a Markdown ratio
// table led by the servers' CPU per unit of work, and JSON.
//
// The measuring (Run) needs Java and the jars; the aggregation and rendering (Summarize,
// Markdown) are pure functions of the samples and are tested without either.
package compare
