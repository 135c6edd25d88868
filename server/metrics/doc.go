// Package metrics exposes a Strom node's metrics in the Prometheus format, and its health,
// on an HTTP listener.
//
// Names follow Fluss's Prometheus reporter where Fluss has the metric: "fluss_", the scope
// (coordinator, tabletserver), the infix (request, table_bucket_log, logicalStorage, ...) and
// Fluss's metric name, joined by "_", with Fluss's variables as labels (request, database,
// table, partition, bucket, host, server_id). Fluss exports meters ("xPerSecond") as gauges of
// a rate and histograms as summaries; Strom exports them the Prometheus way instead, so rates
// and quantiles are computed by PromQL over any window:
//
//   - a meter "xPerSecond" becomes the counter "x_total" (requestsPerSecond -> requests_total);
//   - a histogram in milliseconds "xTimeMs" becomes a histogram in seconds "xTime_seconds";
//     a histogram in bytes keeps its name.
//
// Strom-only metrics (Pebble, etcd, connections, authentication failures) use the same
// scheme. docs/operations.md lists every metric.
package metrics
