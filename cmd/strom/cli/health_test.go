package cli

import (
	"encoding/json"
	"regexp"
	"testing"
)

var addrRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// `strom cluster health` reports GET_CLUSTER_HEALTH with the servers: a single node with a
// table of three buckets is GREEN (exit 0), nothing offline, nothing under-replicated.
func TestClusterHealth(t *testing.T) {
	c := newCLI(t)
	c.ok("", "table", "create", "ev", "-c", "id:INT", "--buckets", "3")
	golden(t, "cluster_health.golden", addrRE.ReplaceAllString(c.ok("", "cluster", "health"), "127.0.0.1:<PORT>"))
	var h healthJSON
	if err := json.Unmarshal([]byte(c.ok("", "cluster", "health", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	if h.Status != "GREEN" || h.Buckets != 3 || h.OfflineBuckets != 0 || h.Replicas != 3 || h.UnderReplicated != 0 || len(h.Servers) != 2 {
		t.Errorf("cluster health --json = %+v", h)
	}
}
