package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/rest"
)

// node is a single-node Strom with its HTTP listener (REST API and console) on a free port.
type node struct {
	base      string // http://HOST:PORT
	bootstrap string // the coordinator's Fluss listener
	tablet    string // the tablet server's Fluss listener
	client    *http.Client
}

func startNode(t *testing.T, mutate func(*config.Config)) *node {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	if err := cfg.Set("http.listen", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(&cfg)
	}
	n, err := server.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start strom: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	if err := rest.Mount(n, cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return &node{base: "http://" + n.HTTPAddr(), bootstrap: n.Addr("coordinator"), tablet: n.Addr("tablet-server"), client: &http.Client{}}
}

// reply is a decoded response.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// errorCode is the Fluss error code of an error reply (-999 when there is none).
func (r reply) errorCode() int {
	if v, ok := r.body["error_code"].(float64); ok {
		return int(v)
	}
	return -999
}

type call struct {
	method, path string
	body         any    // marshalled to JSON unless a string or []byte
	contentType  string // default application/json
	user, pass   string
	bearer       string
}

func (n *node) do(t *testing.T, c call) reply {
	t.Helper()
	var rd io.Reader
	switch b := c.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, n.base+c.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		ct := c.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %v: %s", c.method, c.path, err, raw)
		}
	}
	return r
}

// must runs c and fails the test unless it answers want.
func (n *node) must(t *testing.T, want int, c call) reply {
	t.Helper()
	r := n.do(t, c)
	if r.status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, r.status, want, r.raw)
	}
	return r
}

// refused runs c and checks its status and Fluss error code, and that the body names the code.
func (n *node) refused(t *testing.T, status, code int, c call) reply {
	t.Helper()
	r := n.do(t, c)
	if r.status != status || r.errorCode() != code {
		t.Fatalf("%s %s: status %d code %d, want %d code %d: %s", c.method, c.path, r.status, r.errorCode(), status, code, r.raw)
	}
	if name, _ := r.body["error_name"].(string); name == "" || r.body["message"] == "" {
		t.Fatalf("%s %s: error body without name or message: %s", c.method, c.path, r.raw)
	}
	return r
}

func (n *node) createDB(t *testing.T, name string) {
	t.Helper()
	n.must(t, http.StatusCreated, call{method: "POST", path: "/api/v1/databases", body: map[string]any{"name": name}})
}

func (n *node) createTable(t *testing.T, db string, spec map[string]any) {
	t.Helper()
	n.must(t, http.StatusCreated, call{method: "POST", path: "/api/v1/databases/" + db + "/tables", body: spec})
}

func col(name, typ string) map[string]any { return map[string]any{"name": name, "type": typ} }
