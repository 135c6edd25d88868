package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var rebalanceID = regexp.MustCompile(`[0-9a-f]{32}`)

// The membership commands against the single node: its one tablet server can be tagged; a
// rebalance has nothing to move (COMPLETED at once) or, with the server tagged, nowhere to
// move it (REBALANCE_FAILURE). The cluster behaviour is tested in tests/cluster.
func TestClusterTagAndRebalance(t *testing.T) {
	c := newCLI(t)
	c.createShop()
	var cl struct {
		Servers []struct {
			ID   int32  `json:"id"`
			Type string `json:"type"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "cluster", "--json")), &cl); err != nil {
		t.Fatal(err)
	}
	self := ""
	for _, s := range cl.Servers {
		if s.Type == "tablet" {
			self = itoa(s.ID)
		}
	}
	if self == "" {
		t.Fatalf("no tablet server in %+v", cl)
	}

	golden(t, "rebalance_progress_none.golden", c.ok("", "cluster", "rebalance", "progress"))
	if r := c.run("", "cluster", "rebalance", "cancel"); r.code == 0 || !strings.Contains(r.err, "No rebalance") {
		t.Errorf("cancel without a rebalance: exit %d, %q", r.code, r.err)
	}
	out := c.ok("", "cluster", "rebalance")
	id := rebalanceID.FindString(out)
	if id == "" || !strings.Contains(out, "started") {
		t.Fatalf("rebalance printed %q", out)
	}
	golden(t, "rebalance_progress_empty.golden", rebalanceID.ReplaceAllString(c.ok("", "cluster", "rebalance", "progress", id), "<ID>"))
	if r := c.run("", "cluster", "rebalance", "progress", strings.Repeat("0", 32)); r.code == 0 || !strings.Contains(r.err, "not the current rebalance") {
		t.Errorf("progress of another id: exit %d, %q", r.code, r.err)
	}

	if r := c.run("", "cluster", "tag", "add", "99"); r.code == 0 || !strings.Contains(r.err, "Server 99 not exists") {
		t.Errorf("tag of an unknown server: exit %d, %q", r.code, r.err)
	}
	if r := c.run("", "cluster", "tag", "add", self, "--tag", "sometimes"); r.code != ExitUsage {
		t.Errorf("bad tag: exit %d, %q", r.code, r.err)
	}
	if got := c.ok("", "cluster", "tag", "add", self); got != "tagged server "+self+" PERMANENT_OFFLINE\n" {
		t.Errorf("tag add printed %q", got)
	}
	c.ok("", "cluster", "tag", "add", self) // the same tag again changes nothing
	if r := c.run("", "cluster", "tag", "add", self, "--tag", "temporary-offline"); r.code == 0 || !strings.Contains(r.err, "already exists") {
		t.Errorf("a second tag: exit %d, %q", r.code, r.err)
	}
	if r := c.run("", "cluster", "rebalance"); r.code == 0 || !strings.Contains(r.err, "cannot move the replica") {
		t.Errorf("rebalance with the only server tagged: exit %d, %q", r.code, r.err)
	}
	if r := c.run("", "cluster", "tag", "remove", self, "--tag", "temporary-offline"); r.code == 0 || !strings.Contains(r.err, "not exists") {
		t.Errorf("remove of another tag: exit %d, %q", r.code, r.err)
	}
	c.ok("", "cluster", "tag", "remove", self)
	if out := c.ok("", "cluster", "rebalance", "--wait", "--goal", "leader"); !strings.Contains(out, "COMPLETED, 0 of 0 moves done") {
		t.Errorf("rebalance --wait printed %q", out)
	}
	if r := c.run("", "cluster", "rebalance", "--goal", "fastest"); r.code != ExitUsage {
		t.Errorf("bad goal: exit %d, %q", r.code, r.err)
	}
}
