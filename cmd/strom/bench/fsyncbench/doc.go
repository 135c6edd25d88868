// Package fsyncbench measures on one disk what making every append durable before it is
// acknowledged costs with a file per writer (Strom's bucket segments) and with one
// group-commit journal shared by every writer, so that the choice between the designs rests
// on this disk's numbers (issue 26, item 3: "measure first"). The layouts:
//
//   - LayoutFiles, the design Strom has: each of N writers (a bucket with a request in
//     flight) appends its record to its own file and fdatasyncs that file before the next.
//   - LayoutJournal: the same N writers hand the same records to one journal file; one
//     committer writes whatever is pending in one write and acknowledges all of it after one
//     fdatasync (group commit, as BookKeeper's bookies do).
//   - LayoutJournalSegments: the journal design in full, each record also written to its
//     writer's own file without a sync, those files fdatasynced in the background once per
//     SegmentSyncEvery: what adopting the journal would actually cost the disk.
//
// Every run writes into fresh files that grow by appending, as Strom's segments do, and
// removes them afterwards. Nothing here is used by the server.
package fsyncbench
