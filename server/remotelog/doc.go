// Package remotelog tiers the closed segments of bucket logs to remote storage
// (remote.data.dir, package server/remote) and answers where a tiered offset lives, the way
// Fluss's RemoteLogManager does (fluss-server/.../server/log/remote upstream). See
// docs/tiered-storage.md.
//
// # Layout (fluss-common/.../utils/FlussPaths.java upstream)
//
//	log/{database}/{table}-{table id}/[{partition name}-p{partition id}/]{bucket}/
//	    {segment id}/{base offset, 20 digits}.log          the segment, byte for byte
//	    {segment id}/{base offset, 20 digits}.index        Strom's offset index (server/logstore/doc.go)
//	    {segment id}/{base offset, 20 digits}.timeindex    Strom's time index
//	    {segment id}/{end offset, 20 digits}.writer_snapshot  writer state at the segment's end, when kept
//	    metadata/{manifest id}.manifest                    the bucket's remote log manifest (Fluss JSON)
//
// Segment and manifest ids are UUIDs whose first four bytes are the leader epoch of the
// leader that wrote them (the rest random), so an orphan sweep can tell objects of earlier
// leaderships, which can never be committed any more, from a newer leader's uploads in
// flight.
//
// # Commit
//
// A bucket's remote log is what its committed manifest names. The manifest's location and
// offsets are one record in the metadata store (remote-log/{table}/{partition}/{bucket}); a
// copy is committed by writing the new manifest object, then that record, in a transaction
// fenced by the bucket's leader epoch (control.Control.CommitAsLeader in a cluster), so a
// deposed leader commits nothing. Invariants:
//
//   - Every object a committed manifest names was uploaded whole (Upload returned and the
//     object's size was checked) before the record naming the manifest was written.
//   - A local segment is deleted only when its every offset is below the committed remote
//     end, and never below the KV-snapshot or lake floors (logstore.Tiering.DeleteTieredSegments).
//   - An object no committed manifest names is an orphan: it is deleted after a commit that
//     dropped it (expired segments, the previous manifest), or by the sweep a leader runs
//     when it takes a bucket over and after a failed pass (only objects of its own or earlier
//     epochs).
//   - Remote segments expire by table.log.ttl (their max timestamp), never past what a
//     lake-enabled table has tiered to the lake; expiry is committed before the objects go.
//
// Every replica (leader or follower) reads the committed record each pass, so followers
// delete their tiered local segments too, and a new leader continues from the committed
// manifest.
package remotelog
