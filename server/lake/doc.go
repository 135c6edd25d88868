// Package lake tiers Strom tables into Apache Iceberg, the job Apache Fluss leaves to a
// separate Flink tiering service. It runs in its own process, cmd/strom-lake, which the tablet
// server starts and serves its buckets' logs and catalog to (RunChild, package lakehost), so
// that the server never links Iceberg's libraries.
//
// For every bucket of a table with table.datalake.enabled, a Tierer reads the bucket's log
// from the last tiered offset, converts the Arrow batches to the Iceberg table's schema (the
// table's columns followed by the system columns __bucket, __offset and __timestamp), writes
// Parquet files and commits them in one Iceberg snapshot per table and round. The snapshot
// summary records, as Fluss's tiering job records it, commit-user=__fluss_lake_tiering and
// fluss-offsets=<path of a JSON file with the per-bucket log end offsets tiered so far>.
//
// Exactly once: the offsets a round starts from are always those of the last Iceberg snapshot
// committed by the tiering (read back from Iceberg at start and after any failed commit), and
// the data files and the offsets they end at become visible in one atomic catalog commit. A
// crash before the commit leaves only unreferenced (orphan) files; a crash after it resumes
// from the committed offsets. docs/lake.md gives the whole argument and the layout.
package lake
