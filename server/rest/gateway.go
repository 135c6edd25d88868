package rest

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/stromdb/strom/fluss"
)

// Options configure a Gateway.
type Options struct {
	// Bootstrap is HOST:PORT of the Fluss listener the gateway connects to (the node's own).
	Bootstrap string
	// SASL says that listener authenticates with SASL/PLAIN: every request must then carry
	// HTTP Basic credentials, and runs on a connection logged in as that user.
	SASL bool
	// Tokens maps the SHA-256 of a bearer token to the SASL user it stands for; Password
	// returns that user's password, with which the gateway logs in. Both nil: no tokens.
	Tokens   map[[32]byte]string
	Password func(user string) (string, bool)
	// Status, when set, adds the hosting node's view (ISR, follower lag, etcd members) to
	// /cluster and .../buckets.
	Status StatusSource
	// MaxBodyBytes bounds a request body (default 8 MiB).
	MaxBodyBytes int64
	// MaxRows bounds the rows of one scan or tail page (default 10000).
	MaxRows int
	// MaxConnections bounds the pooled Fluss connections, one per distinct set of
	// credentials (default 32); the least recently used one is closed beyond it.
	MaxConnections int
	Log            *slog.Logger
}

// Gateway serves the REST API. It holds no table state: only a pool of Fluss connections.
type Gateway struct {
	opts  Options
	log   *slog.Logger
	mu    sync.Mutex
	conns map[[32]byte]*pooled // guarded by mu
	clock uint64               // guarded by mu; use counter for LRU eviction
	ctx   context.Context      // cancelled by Close: ends streaming tails
	stop  context.CancelFunc
}

type pooled struct {
	conn    *fluss.Connection
	lastUse uint64
}

// New returns a gateway for opts; it connects lazily, on the first request of each user.
func New(opts Options) *Gateway {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	if opts.MaxRows <= 0 {
		opts.MaxRows = 10000
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 32
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Gateway{opts: opts, log: opts.Log, conns: map[[32]byte]*pooled{}, ctx: ctx, stop: cancel}
}

// Close ends streaming responses and closes every pooled connection.
func (g *Gateway) Close() error {
	g.stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for k, p := range g.conns {
		errs = append(errs, p.conn.Close())
		delete(g.conns, k)
	}
	return errors.Join(errs...)
}

// connection returns the pooled connection for the request's credentials, connecting (and,
// with SASL, logging in) on first use. A failed login is not pooled, so every retry is
// checked by the Fluss listener again (with its failure delay).
func (g *Gateway) connection(ctx context.Context, r *http.Request) (*fluss.Connection, error) {
	cfg := fluss.Config{BootstrapServers: g.opts.Bootstrap}
	var key [32]byte
	if g.opts.SASL {
		user, pass, ok := r.BasicAuth()
		if tok, isBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); isBearer {
			if user, pass, ok = g.tokenUser(tok); !ok {
				return nil, &apiError{status: http.StatusUnauthorized, code: fluss.ErrAuthenticate, msg: "unknown bearer token"}
			}
		}
		if !ok || user == "" {
			return nil, &apiError{status: http.StatusUnauthorized, code: fluss.ErrAuthenticate,
				msg: "this listener requires SASL/PLAIN credentials: send HTTP Basic authentication or a bearer token"}
		}
		cfg.SecurityProtocol, cfg.SASLMechanism = "sasl", "PLAIN"
		cfg.SASLUsername, cfg.SASLPassword = user, pass
		key = sha256.Sum256([]byte(user + "\x00" + pass))
	}
	g.mu.Lock()
	g.clock++
	if p, ok := g.conns[key]; ok {
		p.lastUse = g.clock
		g.mu.Unlock()
		return p.conn, nil
	}
	g.mu.Unlock()

	conn, err := fluss.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", g.opts.Bootstrap, err)
	}
	if g.opts.SASL {
		// Connect may defer the login to the first call: make one so that bad credentials
		// are refused here and never pooled.
		if _, err := conn.Admin().GetServerNodes(ctx); err != nil {
			conn.Close()
			return nil, err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.conns[key]; ok { // another request connected meanwhile
		conn.Close()
		return p.conn, nil
	}
	if len(g.conns) >= g.opts.MaxConnections {
		var oldest [32]byte
		var min uint64 = ^uint64(0)
		for k, p := range g.conns {
			if p.lastUse < min {
				oldest, min = k, p.lastUse
			}
		}
		// Requests still using it fail with fluss.ErrClosed, which is answered as a 500;
		// the pool is sized so that this only happens under many distinct users.
		g.conns[oldest].conn.Close()
		delete(g.conns, oldest)
	}
	g.conns[key] = &pooled{conn: conn, lastUse: g.clock}
	return conn, nil
}

// tokenUser resolves a bearer token to its user and that user's password. Every configured
// token's digest is compared, in constant time, so the answer's timing says nothing about
// which digest came close.
func (g *Gateway) tokenUser(tok string) (user, pass string, ok bool) {
	sum := sha256.Sum256([]byte(tok))
	for digest, u := range g.opts.Tokens {
		if subtle.ConstantTimeCompare(digest[:], sum[:]) == 1 {
			user = u
		}
	}
	if user == "" || g.opts.Password == nil {
		return "", "", false
	}
	pass, ok = g.opts.Password(user)
	return user, pass, ok
}

// readJSON decodes the request body into v, reading at most MaxBodyBytes.
func (g *Gateway) readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	// curl -d sends application/x-www-form-urlencoded unless told otherwise: read it as JSON
	// too, so that the docs' one-line curl examples need no -H.
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") &&
		!strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return &apiError{status: http.StatusUnsupportedMediaType, code: fluss.ErrCorruptMessage,
			msg: fmt.Sprintf("Content-Type %q: want application/json", ct)}
	}
	body := http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
	d := json.NewDecoder(body)
	d.UseNumber()
	// A misspelt field ("primary_keys") would otherwise be dropped silently and, say,
	// create a log table: every body field is one the route reads.
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: http.StatusRequestEntityTooLarge, code: fluss.ErrRecordTooLarge,
				msg: fmt.Sprintf("request body larger than %d bytes", g.opts.MaxBodyBytes)}
		}
		if errors.Is(err, io.EOF) {
			return badRequest(fluss.ErrCorruptMessage, "empty request body: want a JSON document")
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return badRequest(fluss.ErrCorruptMessage, "request body: "+strings.TrimPrefix(err.Error(), "json: ")+" (see "+Prefix+"/openapi.json)")
		}
		return badRequest(fluss.ErrCorruptMessage, "request body is not valid JSON: "+err.Error())
	}
	if d.More() {
		return badRequest(fluss.ErrCorruptMessage, "request body holds more than one JSON document")
	}
	return nil
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// handlerFunc is a route's handler: it gets the request's connection and returns an error to
// be answered by writeError.
type handlerFunc func(ctx context.Context, c *fluss.Connection, w http.ResponseWriter, r *http.Request) error

// route is one REST endpoint; routes() is the single list the mux, the OpenAPI test and the
// docs agree on.
type route struct {
	method, pattern string // pattern in net/http's syntax, relative to /api/v1
	h               handlerFunc
}

// Prefix is where the API is mounted.
const Prefix = "/api/v1"

// Handler returns the API's handler, to be mounted at Prefix+"/" of the HTTP listener.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range g.routes() {
		mux.HandleFunc(rt.method+" "+Prefix+rt.pattern, g.wrap(rt.h))
	}
	mux.HandleFunc("GET "+Prefix+"/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, g.log, &apiError{status: http.StatusNotFound, code: fluss.ErrUnknownServerError,
			msg: fmt.Sprintf("no route %s %s (see %s/openapi.json)", r.Method, r.URL.Path, Prefix)})
	})
	return mux
}

func (g *Gateway) wrap(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		c, err := g.connection(ctx, r)
		if err == nil {
			err = h(ctx, c, w, r)
		}
		if err != nil {
			writeError(w, g.log, err)
		}
	}
}
