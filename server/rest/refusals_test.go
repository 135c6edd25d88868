package rest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stromdb/strom/fluss"
	"github.com/stromdb/strom/server"
	"github.com/stromdb/strom/server/config"
	"github.com/stromdb/strom/server/rest"
)

func TestBadBodies(t *testing.T) {
	n := startNode(t, func(c *config.Config) {
		if err := c.Set("http.rest.max-request-size", "2kb"); err != nil {
			t.Fatal(err)
		}
	})
	n.createDB(t, "db")
	n.createTable(t, "db", map[string]any{"name": "t", "columns": []any{col("id", "INT"), col("s", "STRING")}, "primary_key": []string{"id"}})
	p := api + "/databases/db/tables/t/rows"
	for _, tc := range []struct {
		name, body string
		status     int
		code       int
	}{
		{"not JSON", `{"rows": [`, 400, 3},
		{"empty", ``, 400, 3},
		{"two documents", `{"rows":[{"id":1}]} {"rows":[]}`, 400, 3},
		{"no rows", `{"rows": []}`, 400, 3},
		{"row not an object", `{"rows": [1]}`, 400, 3},
		{"unknown column", `{"rows": [{"id": 1, "nope": 2}]}`, 400, 3},
		{"unknown body field", `{"rows": [{"id": 1}], "colums": ["id"]}`, 400, 3},
		{"wrong type", `{"rows": [{"id": "one"}]}`, 400, 3},
		{"int overflow", `{"rows": [{"id": 4294967296}]}`, 400, 3},
		{"null primary key", `{"rows": [{"s": "x"}]}`, 400, 3},
		{"oversize", `{"rows": [{"id": 1, "s": "` + strings.Repeat("x", 4096) + `"}]}`, 413, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.refused(t, tc.status, tc.code, call{method: "POST", path: p, body: tc.body})
		})
	}
	// A bad row anywhere fails the request before anything is written.
	n.refused(t, 400, 3, call{method: "POST", path: p, body: `{"rows": [{"id": 1}, {"id": "x"}]}`})
	if r := n.must(t, 200, call{method: "GET", path: api + "/databases/db/tables/t/scan"}); string(r.raw) != "{\"rows\":[]}\n" {
		t.Fatalf("rows written by a refused request: %s", r.raw)
	}
	n.refused(t, 415, 3, call{method: "POST", path: p, body: `id,s`, contentType: "text/csv"})
	// A misspelt create field is refused, not dropped (it would make a log table).
	r := n.refused(t, 400, 3, call{method: "POST", path: api + "/databases/db/tables", body: map[string]any{"name": "u", "columns": []any{col("id", "INT")}, "primary_keys": []string{"id"}}})
	if !strings.Contains(r.body["message"].(string), `"primary_keys"`) {
		t.Fatalf("the refusal does not name the field: %s", r.raw)
	}
	// curl -d's default content type is read as JSON.
	n.must(t, 200, call{method: "POST", path: p, body: `{"rows": [{"id": 1}]}`, contentType: "application/x-www-form-urlencoded"})
	n.refused(t, 400, 39, call{method: "GET", path: api + "/databases/db/tables/t/scan?limit=0"})
	n.refused(t, 400, 39, call{method: "GET", path: api + "/databases/db/tables/t/scan?limit=1000000"})
	n.refused(t, 400, 39, call{method: "DELETE", path: api + "/databases/db?cascade=maybe"})
	n.refused(t, 404, -1, call{method: "GET", path: api + "/nothing/here"})
	n.refused(t, 404, -1, call{method: "PUT", path: api + "/databases"})
}

const jaas = `org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required ` +
	`user_admin="admin-secret" user_alice="alice-secret";`

func TestAuthentication(t *testing.T) {
	n := startNode(t, func(c *config.Config) {
		c.SecurityProtocolMap = map[string]string{"FLUSS": "SASL"}
		c.PlainJAASConfig = jaas
		for k, v := range map[string]string{"authorizer.enabled": "true", "super.users": "User:admin", "internal.listener.name": "INTERNAL",
			"http.rest.tokens": "admin:" + digest("admin-token") + ", alice:" + digest("alice-token")} {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	// No credentials, wrong credentials: 401 with the SASL error code and a Basic challenge.
	r := n.refused(t, 401, 46, call{method: "GET", path: api + "/databases"})
	if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("no Basic challenge: %v", r.header)
	}
	n.refused(t, 401, 46, call{method: "GET", path: api + "/databases", user: "alice", pass: "wrong"})
	n.refused(t, 401, 46, call{method: "GET", path: api + "/databases", user: "mallory", pass: "x"})

	admin := func(c call) call { c.user, c.pass = "admin", "admin-secret"; return c }
	alice := func(c call) call { c.user, c.pass = "alice", "alice-secret"; return c }
	n.must(t, 201, admin(call{method: "POST", path: api + "/databases", body: map[string]any{"name": "sec"}}))
	n.must(t, 201, admin(call{method: "POST", path: api + "/databases/sec/tables", body: map[string]any{"name": "t", "columns": []any{col("id", "INT")}, "primary_key": []string{"id"}}}))
	rows := call{method: "POST", path: api + "/databases/sec/tables/t/rows", body: map[string]any{"rows": []any{map[string]any{"id": 1}}}}
	n.must(t, 200, admin(rows))

	// Alice is logged in but has no ACLs: the Fluss listener's authorizer refuses her.
	n.refused(t, 403, 48, alice(call{method: "POST", path: api + "/databases", body: map[string]any{"name": "mine"}}))
	// A table she may not describe is hidden from her metadata, as from any Fluss client.
	n.refused(t, 404, 7, alice(rows))
	n.refused(t, 404, 7, alice(call{method: "POST", path: api + "/databases/sec/tables/t/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}}}}))
	if r := n.must(t, 200, alice(call{method: "GET", path: api + "/databases"})); jsonOf(t, r.body["databases"]) != "[]" {
		t.Fatalf("alice lists databases she may not see: %s", r.raw)
	}

	// Granted READ on the table, she can look up but still not write.
	conn, err := fluss.Connect(t.Context(), fluss.Config{BootstrapServers: n.bootstrap, SecurityProtocol: "sasl", SASLUsername: "admin", SASLPassword: "admin-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res := fluss.TableResource(fluss.NewTablePath("sec", "t"))
	if _, err := conn.Admin().CreateAcls(t.Context(), []fluss.AclBinding{fluss.NewAclBinding(res, fluss.User("alice"), fluss.OperationRead)}); err != nil {
		t.Fatal(err)
	}
	r = n.must(t, 200, alice(call{method: "POST", path: api + "/databases/sec/tables/t/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}}}}))
	if jsonOf(t, r.body["rows"]) != `[{"id":1}]` {
		t.Fatalf("alice's lookup: %s", r.raw)
	}
	n.refused(t, 403, 48, alice(rows))

	// Bearer tokens stand for their users: the same rights, no password on the wire.
	bearer := func(tok string, c call) call { c.bearer = tok; return c }
	n.refused(t, 401, 46, bearer("nope", call{method: "GET", path: api + "/databases"}))
	n.refused(t, 403, 48, bearer("alice-token", rows))
	n.must(t, 200, bearer("alice-token", call{method: "POST", path: api + "/databases/sec/tables/t/lookup", body: map[string]any{"keys": []any{map[string]any{"id": 1}}}}))
	n.must(t, 200, bearer("admin-token", rows))
}

func digest(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

func TestTokensNeedSASL(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	for k, v := range map[string]string{"http.listen": "127.0.0.1:0", "http.rest.tokens": "alice:" + digest("t")} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	n, err := server.Start(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := rest.Mount(n, cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "SASL") {
		t.Fatalf("tokens without a SASL listener: %v", err)
	}
	if err := cfg.Set("http.rest.tokens", "alice:not-hex"); err == nil {
		t.Fatal("a token digest that is not SHA-256 hex accepted")
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	n := startNode(t, nil)
	r := n.must(t, 200, call{method: "GET", path: api + "/openapi.json"})
	if r.body["openapi"] != "3.0.3" {
		t.Fatalf("openapi: %.200s", r.raw)
	}
}

func TestConsoleIsServed(t *testing.T) {
	n := startNode(t, nil)
	for _, f := range []string{"/console/", "/console/app.js", "/console/app.css"} {
		r := n.must(t, 200, call{method: "GET", path: f})
		if len(r.raw) < 100 {
			t.Fatalf("%s: %s", f, r.raw)
		}
	}
	n.must(t, 200, call{method: "GET", path: "/metrics"}) // the metrics handler is still there
}

func TestRESTDisabled(t *testing.T) {
	n := startNode(t, func(c *config.Config) {
		if err := c.Set("http.rest.enabled", "false"); err != nil {
			t.Fatal(err)
		}
	})
	n.must(t, 404, call{method: "GET", path: api + "/cluster"})
	n.must(t, 404, call{method: "GET", path: "/console/"})
	n.must(t, 200, call{method: "GET", path: "/healthz"})
}

// selfSigned writes a certificate for 127.0.0.1 and its key to dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strom-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	n := startNode(t, func(c *config.Config) {
		for k, v := range map[string]string{"http.tls.cert-file": certFile, "http.tls.key-file": keyFile} {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	n.base = strings.Replace(n.base, "http://", "https://", 1)
	n.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	n.must(t, 200, call{method: "GET", path: api + "/cluster"})
	// Plain HTTP on the TLS port is refused by the TLS handshake.
	resp, err := http.Get(strings.Replace(n.base, "https://", "http://", 1) + "/healthz")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatalf("plain HTTP served on the TLS listener: %s", b)
		}
	}
}

func TestTLSNeedsBothFiles(t *testing.T) {
	certFile, _, _ := selfSigned(t, t.TempDir())
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CoordinatorListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	cfg.TabletListeners = []config.Listener{{Name: "FLUSS", Host: "127.0.0.1", Port: 0}}
	for k, v := range map[string]string{"http.listen": "127.0.0.1:0", "http.tls.cert-file": certFile} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	n, err := server.Start(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		n.Close()
		t.Fatal("started with http.tls.cert-file and no key file")
	}
	if !strings.Contains(err.Error(), "http.tls.key-file") {
		t.Fatalf("error does not name the missing option: %v", err)
	}
}
