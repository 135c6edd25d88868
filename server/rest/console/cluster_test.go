package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/tests/clustertest"
)

// getJSON decodes GET url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

type bucketJSON struct {
	Bucket int32 `json:"bucket"`
	Leader *struct {
		ID int32 `json:"id"`
	} `json:"leader"`
	Replicas []int32 `json:"replicas"`
	ISR      []int32 `json:"isr"`
}

// TestConsoleClusterFailover watches a leader failover in the console of a 3-node cluster
// of `strom serve` processes: the bucket view of a replicated table shows each bucket's
// leader, ISR and follower lag; after a kill -9 of one bucket's leader, the same page (left
// open, refreshing itself) shows the bucket's new leader, a higher leader epoch and the ISR
// without the killed server.
func TestConsoleClusterFailover(t *testing.T) {
	if os.Getenv("STROM_TEST_CONSOLE_CLUSTER") == "" {
		t.Skip("3-node browser test: run with `make test-console-cluster` (STROM_TEST_CONSOLE_CLUSTER=1)")
	}
	exe := chromium(t)
	_, file, _, _ := runtime.Caller(0)
	bin, err := clustertest.BuildStrom(filepath.Join(filepath.Dir(file), "..", "..", ".."), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.StartCluster(t, bin, clustertest.ClusterOptions{HTTP: true, Set: map[string]string{
		"tablet-server.lease-ttl":  "2s",
		"coordinator.lease-ttl":    "2s",
		"log.replica.max-lag-time": "3s",
	}})
	ctx := t.Context()
	// A node is ready once it serves; the active coordinator may not have seen every tablet
	// server's registration yet, and a table of replication factor 3 needs all three.
	waitFor(t, "the active coordinator lists 3 tablet servers", func() bool {
		for _, n := range c.Nodes {
			var cl struct {
				Servers []struct {
					Type string `json:"type"`
				} `json:"servers"`
				ThisNode struct {
					Active bool `json:"active_coordinator"`
				} `json:"this_node"`
			}
			getJSON(t, "http://"+n.HTTPAddr+"/api/v1/cluster", &cl)
			tablets := 0
			for _, s := range cl.Servers {
				if s.Type == "tablet" {
					tablets++
				}
			}
			if cl.ThisNode.Active {
				return tablets == 3
			}
		}
		return false
	})
	conn, err := fluss.Connect(ctx, fluss.Config{BootstrapServers: c.Bootstrap(), WriterBatchTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	path := fluss.NewTablePath("fluss", "orders")
	if err := conn.Admin().CreateTable(ctx, path, fluss.TableDescriptor{BucketCount: 3,
		Schema:     fluss.NewSchema([]fluss.Column{fluss.NewColumn("id", fluss.Int()), fluss.NewColumn("item", fluss.String())}, "id"),
		Properties: map[string]string{"table.replication.factor": "3"}}, false); err != nil {
		t.Fatal(err)
	}
	table, err := conn.Table(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := table.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := w.Upsert(ctx, fluss.Row{int32(i), fmt.Sprintf("item-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()

	// The console runs on the active coordinator's node, which survives; the victim leads
	// a bucket and is a standby, so the failover is the bucket's alone.
	var console *clustertest.Node
	for _, n := range c.Nodes {
		var cl struct {
			ThisNode struct {
				Active bool `json:"active_coordinator"`
			} `json:"this_node"`
		}
		getJSON(t, "http://"+n.HTTPAddr+"/api/v1/cluster", &cl)
		if cl.ThisNode.Active {
			console = n
		}
	}
	if console == nil {
		t.Fatal("no node says it is the active coordinator")
	}
	var bs struct {
		Buckets []bucketJSON `json:"buckets"`
	}
	getJSON(t, "http://"+console.HTTPAddr+"/api/v1/databases/fluss/tables/orders/buckets", &bs)
	victim, bucket := int32(-1), int32(-1)
	for _, b := range bs.Buckets {
		if b.Leader != nil && b.Leader.ID != console.ID {
			victim, bucket = b.Leader.ID, b.Bucket
			break
		}
	}
	if victim < 0 {
		t.Fatalf("every bucket is led by the active coordinator's node %d: %+v", console.ID, bs.Buckets)
	}

	shots := os.Getenv("STROM_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	b := newBrowser(t, exe, shots)
	row := fmt.Sprintf(`#table-detail tr[data-bucket="%d"]`, bucket)
	cellText := func(cls string) string {
		return fmt.Sprintf(`((document.querySelector('%s td.%s')||{}).innerText||'')`, row, cls)
	}
	// Before: the victim leads, all three replicas are in sync, both followers caught up.
	b.run("bucket view", chromedp.Navigate("http://"+console.HTTPAddr+"/console/#tables"),
		b.contains("#table-list tbody", "fluss.orders"),
		chromedp.Click(chromedp.CSS(`#table-list tr[data-name="fluss.orders"]`)),
		b.until(fmt.Sprintf(`%s.startsWith('%d ')`, cellText("leader"), victim)),
		b.until(fmt.Sprintf(`%s.split(', ').length === 3`, cellText("isr"))),
		b.until(fmt.Sprintf(`/^\d+: 0, \d+: 0$/.test(%s)`, cellText("lag"))),
		b.shot("failover-before.png"))

	c.Node(victim).Kill()
	t.Logf("killed node %d, leader of bucket %d; watching the console of node %d", victim, bucket, console.ID)

	// After: a surviving replica leads, in a new epoch, and the ISR lost the victim. The
	// page is not reloaded: it re-reads the buckets by itself.
	b.run("bucket view after the kill",
		b.until(fmt.Sprintf(`/^\d+ /.test(%[1]s) && !%[1]s.startsWith('%[2]d ')`, cellText("leader"), victim)),
		b.until(fmt.Sprintf(`%s.split(', ').length === 2 && !%s.split(', ').includes('%d')`, cellText("isr"), cellText("isr"), victim)),
		b.until(fmt.Sprintf(`Number(%s) >= 1`, cellText("epoch"))),
		b.shot("failover-after.png"))
	// What the page shows is what the API says.
	getJSON(t, "http://"+console.HTTPAddr+"/api/v1/databases/fluss/tables/orders/buckets", &bs)
	for _, x := range bs.Buckets {
		if x.Bucket == bucket && (x.Leader == nil || x.Leader.ID == victim || slices.Contains(x.ISR, victim) || len(x.ISR) != 2) {
			t.Fatalf("bucket %d after the kill: %+v", bucket, x)
		}
	}
	if e := b.errs.get(); len(e) > 0 {
		// Requests in flight while the victim died may fail; the page reports them in its
		// status line and goes on. They are logged, not failures.
		t.Logf("console messages during the failover: %s", strings.Join(e, "; "))
	}
}

// waitFor polls cond until it holds; the minute only turns a cluster that never gets there
// into a failure instead of a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// browser is a headless Chromium on one page, with the page's console errors collected.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	errs  consoleErrors
}

func newBrowser(t *testing.T, exe, shots string) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1480, 600), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx, shots: shots}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.errs.add(m.String())
			}
		}
	}()
	return b
}

func (b *browser) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v (console errors: %q)", step, err, b.errs.get())
	}
}

// until waits for a JavaScript predicate; the 2-minute bound only turns a page that never
// gets there into a failure instead of a hang, it times nothing.
func (b *browser) until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))(ctx, tg)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", expr, err)
		}
		return nil
	})
}

func (b *browser) contains(sel, s string) chromedp.Action[chromedp.Void] {
	return b.until(fmt.Sprintf(`(document.querySelector(%q)||{innerText:""}).innerText.includes(%q)`, sel, s))
}

func (b *browser) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(b.shots, name), buf, 0o644)
	})
}
