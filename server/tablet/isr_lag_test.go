package tablet

import (
	"testing"
	"time"
)

func TestInSyncByLag(t *testing.T) {
	now := time.Unix(1000, 0)
	lag := 3 * time.Second
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name string
		p    followerProgress
		want bool
	}{
		{"at the log end, fetching", followerProgress{leo: 100, lastFetch: ago(time.Second), lastCaughtUp: ago(10 * time.Second)}, true},
		{"behind, caught up recently", followerProgress{leo: 90, lastFetch: ago(time.Second), lastCaughtUp: ago(2 * time.Second)}, true},
		{"behind, not caught up for the lag time", followerProgress{leo: 90, lastFetch: ago(time.Second), lastCaughtUp: ago(4 * time.Second)}, false},
		{"at the log end but silent for the lag time and a long poll (slow disk)", followerProgress{leo: 100, lastFetch: ago(4 * time.Second), lastCaughtUp: ago(4 * time.Second)}, false},
		{"at the log end, its fetch parked at the leader for a long poll", followerProgress{leo: 100, lastFetch: ago(lag + followerMaxWait/2), lastCaughtUp: ago(lag + followerMaxWait/2)}, true},
		{"just fetched after a gap longer than the lag time and a long poll", followerProgress{leo: 100, lastFetch: ago(10 * time.Millisecond), lastGap: 4 * time.Second, lastCaughtUp: ago(10 * time.Millisecond)}, false},
		{"new leadership, not fetched yet", followerProgress{leo: -1, lastFetch: ago(time.Second), lastCaughtUp: ago(time.Second)}, true},
	} {
		if got := inSyncByLag(&c.p, 100, now, lag); got != c.want {
			t.Errorf("%s: inSyncByLag = %v, want %v", c.name, got, c.want)
		}
	}
}
