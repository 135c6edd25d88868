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
// ISR forever while it throttles every write to its pace. A healthy follower sends its next
// fetch as soon as the previous one is answered, and the leader parks an empty fetch for at
// most followerMaxWait, so a follower from which no fetch arrived for maxLag plus that wait
// is not keeping up. (lastFetch is when a fetch arrived; the allowance keeps a short lag
// time, as in tests, from dropping an idle follower whose fetch is parked.) The progress of
// a new leadership starts with lastFetch = now, so a follower is never dropped before it has
// had that long to fetch. The gap between its last two fetches counts too: a follower
// whose fetches arrive every 4 s exceeds a 3.5 s bound only briefly in each cycle, which the
// periodic check (every maxLag/2) would often miss.
func inSyncByLag(p *followerProgress, leo int64, now time.Time, maxLag time.Duration) bool {
	if bound := maxLag + followerMaxWait; now.Sub(p.lastFetch) > bound || p.lastGap > bound {
		return false
	}
	return p.leo == leo || now.Sub(p.lastCaughtUp) <= maxLag
}
