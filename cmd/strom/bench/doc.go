// Package bench measures a running Strom (or Fluss) server over the Fluss wire protocol:
// append and scan throughput of a log table, upsert throughput and lookup latency of a
// primary-key table. It is the engine behind `strom bench`.
//
// Every mode builds its request payloads before the clock starts, so the numbers describe the
// server (and loopback TCP), not the generator. Every loop is bounded by a row or request
// count and by Config.MaxDuration.
//
// The client side is deliberately thin: it speaks through internal/wire, one multiplexed
// connection per worker (or Config.Conns shared ones) to each tablet server, and decodes
// only what it must to verify the answers (batch headers for scans, value presence for
// lookups).
package bench
