package tablet

import "time"

// inSyncByLag is the leader's rule for keeping follower p in the ISR (docs/cluster.md,
// "Replication inside the tablet server"): Kafka's — p is at the log end leo, or caught up within maxLag — and also p must
// have fetched within maxLag.
//
// The second condition is for a follower that is alive but slow (a disk whose fsync takes
// seconds: docs/cluster.md, "Gray failures"). With acks=all its slowness holds the high
// watermark back, so the producers' windows fill and the leader's log end stops moving; each
// of its rare fetches then reaches the log end, and Kafka's rule alone would keep it in the
// ISR forever while it throttles every write to its pace. A healthy follower fetches at
// least every long-poll timeout (500 ms), so not fetching for maxLag means it is not keeping
// up. The progress of a new leadership starts with lastFetch = now, so a follower is never
// dropped before it has had maxLag to fetch.
func inSyncByLag(p *followerProgress, leo int64, now time.Time, maxLag time.Duration) bool {
	if now.Sub(p.lastFetch) > maxLag {
		return false
	}
	return p.leo == leo || now.Sub(p.lastCaughtUp) <= maxLag
}
