package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/rest"
)

// chromium finds a Chromium binary, or skips the test saying how to get one.
func chromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("STROM_TEST_CONSOLE") == "" {
		t.Skip("browser test: run with `make test-console` (STROM_TEST_CONSOLE=1)")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: apt-get install -y chromium")
	return ""
}

func startNode(t *testing.T) (base string, conn *fluss.Connection) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	if err := cfg.Set("http.listen", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := rest.Mount(n, cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	conn, err = fluss.Connect(t.Context(), fluss.Config{BootstrapServers: n.Addr("coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return "http://" + n.HTTPAddr(), conn
}

// writeRows creates the tables the console shows and writes rows with the Go client.
func writeRows(t *testing.T, conn *fluss.Connection) (*fluss.AppendWriter, *fluss.Table) {
	t.Helper()
	ctx := t.Context()
	admin := conn.Admin()
	if err := admin.CreateDatabase(ctx, "shop", nil, false); err != nil {
		t.Fatal(err)
	}
	users := fluss.NewTablePath("shop", "users")
	if err := admin.CreateTable(ctx, users, fluss.TableDescriptor{BucketCount: 3, Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("id", fluss.Int()), fluss.NewColumn("name", fluss.String()), fluss.NewColumn("city", fluss.String())}, "id")}, false); err != nil {
		t.Fatal(err)
	}
	events := fluss.NewTablePath("shop", "events")
	if err := admin.CreateTable(ctx, events, fluss.TableDescriptor{BucketCount: 2, Schema: fluss.NewSchema([]fluss.Column{
		fluss.NewColumn("user_id", fluss.Int()), fluss.NewColumn("kind", fluss.String()), fluss.NewColumn("at", fluss.TimestampLTZ(3))})}, false); err != nil {
		t.Fatal(err)
	}
	ut, err := conn.Table(ctx, users)
	if err != nil {
		t.Fatal(err)
	}
	uw, err := ut.NewUpsert().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"alice", "bob", "carol", "dave", "erin"} {
		if _, err := uw.Upsert(ctx, fluss.Row{int32(i + 1), name, []string{"Berlin", "Lisbon", "Osaka"}[i%3]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := uw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	uw.Close()
	et, err := conn.Table(ctx, events)
	if err != nil {
		t.Fatal(err)
	}
	ew, err := et.NewAppend().CreateWriter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ew.Close() })
	return ew, ut
}

// consoleErrors collects what the page logs as an error: console.error, uncaught
// exceptions, failed loads and CSP violations (the log domain).
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleErrors) add(s string) { c.mu.Lock(); c.msgs = append(c.msgs, s); c.mu.Unlock() }
func (c *consoleErrors) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

func TestConsole(t *testing.T) {
	exe := chromium(t)
	base, conn := startNode(t)
	events, users := writeRows(t, conn)
	shots := os.Getenv("STROM_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	var errs consoleErrors
	messages := chromedp.Console(ctx) // subscribes now (starting the browser), read below
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				errs.add(m.String())
			}
		}
	}()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.CaptureScreenshot()(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), buf, 0o644)
		})
	}
	// until waits for a JavaScript predicate; the 2-minute bound only turns a page that never
	// gets there into a failure instead of a hang, it times nothing. contains waits until the element's text contains s.
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))(ctx, tg)
			return err
		})
	}
	contains := func(sel, s string) chromedp.Action[chromedp.Void] {
		return until(fmt.Sprintf(`(document.querySelector(%q)||{innerText:""}).innerText.includes(%q)`, sel, s))
	}
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v (console errors: %q)", step, err, errs.get())
		}
	}

	run("overview", chromedp.Navigate(base+"/console/#overview"),
		contains("#servers tbody", "coordinator"), contains("#health", "GREEN"),
		contains("#health", "active coordinator"), contains("#etcd tbody", "leader"), shot("overview.png"))

	run("tables", chromedp.KeyEvent("2"), contains("#table-list tbody", "shop.users"),
		chromedp.Click(chromedp.CSS(`#table-list tr[data-name="shop.users"]`)),
		contains("#table-detail", "latest"), contains("#table-detail", "127.0.0.1"),
		// log and KV sizes from /metrics: bucket 0 holds rows, so both are sizes, not "—"
		until(`/^0\t0 \(.*\)\t0\t.*\t\d+(\.\d)? (B|KiB|MiB)\t\d+(\.\d)? (B|KiB|MiB)$/m.test(document.querySelector('#table-detail table.buckets').innerText)`),
		// the single node: every bucket's ISR is the node, it has no followers; no lake tiering
		contains("#table-detail table.buckets", "no followers"), contains("#lake", "off"),
		shot("tables.png"))

	// The data browser shows the rows the client wrote: limit scan, then a lookup.
	run("scan", chromedp.KeyEvent("3"), contains("#data-table", "shop.users"),
		chromedp.SetValue(chromedp.CSS("#data-table"), "shop.users"),
		chromedp.Click(chromedp.CSS("#btn-scan")), contains("#rows tbody", "carol"), contains("#data-info", "5 rows"), shot("data-scan.png"))
	run("lookup", chromedp.SetValue(chromedp.CSS("#data-key"), `{"id": 4}`), chromedp.Click(chromedp.CSS("#btn-lookup")),
		contains("#data-info", "1 row"), contains("#rows tbody", "dave"))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#rows tbody")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "alice") {
		t.Fatalf("lookup of id 4 shows other rows: %q", text)
	}

	// The tail shows what the client appends while it is open.
	run("tail open", chromedp.SetValue(chromedp.CSS("#data-table"), "shop.events"),
		chromedp.Click(chromedp.CSS("#btn-tail")), contains("#data-info", "tailing"))
	for i := 1; i <= 3; i++ {
		h, err := events.Append(t.Context(), fluss.Row{int32(i), fmt.Sprintf("live-%d", i), nil})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		run(fmt.Sprintf("tail row %d", i), contains("#rows tbody", fmt.Sprintf("live-%d", i)), contains("#data-info", fmt.Sprintf("tailing: %d records", i)))
	}
	run("tail screenshot", shot("data-tail.png"), chromedp.Click(chromedp.CSS("#btn-tail")))

	// The charts move with the lookups a client makes.
	lk, err := users.NewLookup().CreateLookuper()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := lk.Lookup(t.Context(), fluss.Row{int32(i%5 + 1)}); err != nil {
				return
			}
		}
	}()
	run("metrics", chromedp.KeyEvent("4"),
		until(`parseFloat(document.querySelector('#val-lookups').innerText) > 0`),
		until(`document.querySelector('#chart-lookups polyline').getAttribute('points').split(' ').length >= 4`),
		// The lookups move bytes and take time: both charts read above zero.
		until(`parseFloat(document.querySelector('#val-bytes').innerText) > 0`),
		until(`parseFloat(document.querySelector('#val-latency').innerText) > 0`),
		shot("metrics.png"))
	close(stop)
	<-done

	if e := errs.get(); len(e) > 0 {
		t.Fatalf("console errors: %q", e)
	}
	t.Logf("screenshots in %s", shots)
}
