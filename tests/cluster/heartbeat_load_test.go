package cluster_test

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHeartbeatsSurviveLoadAndDiskStalls: heartbeat fencing (docs/cluster.md, "Failover in
// under 2 s") must not fence a server that is only busy. With acks=all appends running, the
// test saturates every CPU of the machine from its own process and stalls every node's log
// fdatasync for 1 s, twice (internal/faultfs; below log.flush.max-stall-time), and then
// asserts that no node was fenced or gave up its registration, that appends kept being
// acknowledged, and that the history has nothing lost.
func TestHeartbeatsSurviveLoadAndDiskStalls(t *testing.T) {
	c, f := startGrayCluster(t, nil)
	ctx := testContext(t)
	conn := connect(t, ctx, c)
	table := createTable(t, ctx, conn, "heartbeat_load", logTable())
	h := startAppendHistory(t, ctx, table)
	h.waitMore(t, 200, 30*time.Second)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
		}()
	}
	for range 2 {
		f.set("sync * delay=1s\n")
		time.Sleep(1500 * time.Millisecond)
		f.set("")
		time.Sleep(1500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // load alone
	close(stop)
	wg.Wait()
	h.waitMore(t, 200, 30*time.Second)
	ops := h.end()
	checkAppendHistory(t, ctx, conn, table, ops)

	for _, n := range c.Nodes {
		log, err := os.ReadFile(n.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "heartbeats: tablet server does not answer; fenced") ||
				strings.Contains(line, "fenced by the active coordinator") ||
				strings.Contains(line, "tablet server left the cluster") {
				t.Errorf("node %d: a busy server was fenced: %s", n.ID, line)
			}
			if strings.Contains(line, "heartbeats: the active coordinator does not answer and a majority of the standbys agree") {
				t.Errorf("node %d: a busy coordinator was deposed: %s", n.ID, line)
			}
		}
	}
}
