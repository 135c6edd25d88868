// Package history records what clients did to a Strom cluster during a fault test and checks
// it against what Fluss promises, in the style of Jepsen's checkers (Elle, Knossos) and
// Porcupine:
//
//   - every acknowledged (acks=all) append is in the final log exactly once, at one offset,
//     and appends are never reordered within a bucket: an append acknowledged before another
//     was invoked sits at a lower offset;
//   - no offset of a bucket holds two records, and nothing is in a log that no client wrote;
//   - upserts and lookups of a primary-key table are linearizable per key (a register per key,
//     checked with github.com/anishathalye/porcupine);
//   - the changelog agrees with the lookups: replaying it gives the final lookups' state, it
//     holds every acknowledged upsert once, in real-time order, and nothing else.
//
// A write whose outcome the client does not know (it timed out, failed, or was still in
// flight when the test stopped) may or may not have taken effect: Fluss, like Kafka, may
// commit a write whose request timed out. The checker treats such writes as concurrent with
// everything after their invocation.
package history
