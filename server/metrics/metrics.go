package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stromdb/strom/internal/wire"
	"github.com/stromdb/strom/server/diskwatch"
)

// Sources are the parts of a node the metrics read.
type Sources struct {
	Host     string // Fluss's "host" variable
	ServerID int32  // tablet server id, Fluss's "server_id" variable
	Catalog  Catalog
	Tablet   Tablet
	Meta     MetaStore
	// Cluster is the node's view of the cluster's membership; nil on the single node, which
	// is its own active coordinator and only tablet server.
	Cluster Membership
}

// Membership is what the cluster gauges read from the control plane.
type Membership interface {
	// Active reports whether this node is the active coordinator.
	Active() bool
	// LiveServers returns the ids of the registered (live) tablet servers.
	LiveServers() []int32
}

// Metrics is a node's metric registry plus the observers its wire listeners report to.
type Metrics struct {
	Registry *prometheus.Registry
	// Coordinator and TabletServer observe the requests of each role's listeners.
	Coordinator, TabletServer wire.Observer

	src Sources
}

// New registers every metric of a node on a new registry.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(diskwatch.Collector()) // the process's disks: stalled syncs, I/O errors per device
	// Fluss's server variables, on every fluss_* metric.
	fluss := prometheus.WrapRegistererWith(prometheus.Labels{"host": src.Host, "server_id": strconv.Itoa(int(src.ServerID))}, reg)
	m := &Metrics{
		Registry:     reg,
		Coordinator:  newRequestMetrics(fluss, ScopeCoordinator),
		TabletServer: newRequestMetrics(fluss, ScopeTabletServer),
		src:          src,
	}
	fluss.MustRegister(newTabletCollector(src.Tablet, src.Catalog), newCoordinatorCollector(src.Catalog, src.Tablet, src.Meta, src.Cluster))
	fluss.MustRegister(newScrubCollector(src.Tablet))
	return m
}

// Ready reports why the node cannot serve yet, or nil: the metadata store must answer and
// GET_CLUSTER_HEALTH must be GREEN (every bucket of every table open and in sync).
func (m *Metrics) Ready(ctx context.Context) error {
	if _, err := probeMeta(ctx, m.src.Meta); err != nil {
		return fmt.Errorf("metadata store (etcd) unreachable: %w", err)
	}
	if h := m.src.Catalog.ClusterHealth(); h.GetStatus() != 0 {
		return fmt.Errorf("cluster health is %s: %d of %d bucket leaders active, %d of %d replicas in sync",
			map[int32]string{1: "YELLOW", 2: "RED"}[h.GetStatus()], h.GetActiveLeaderReplicas(), h.GetNumLeaderReplicas(),
			h.GetInSyncReplicas(), h.GetNumReplicas())
	}
	return nil
}

// HandlerOptions select the optional endpoints.
type HandlerOptions struct {
	Pprof bool // serve /debug/pprof/
}

// Handler serves /metrics, /healthz (the process is up), /readyz (Ready) and, with
// opts.Pprof, /debug/pprof/.
func (m *Metrics) Handler(opts HandlerOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := m.Ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "strom: /metrics /healthz /readyz")
		if opts.Pprof {
			fmt.Fprintln(w, "       /debug/pprof/")
		}
	})
	return mux
}

// Listen binds host on the first free port of [lo, hi], as Fluss's Prometheus reporter does
// with a port range.
func Listen(host string, lo, hi int) (net.Listener, error) {
	var errs []error
	for p := lo; p <= hi; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return ln, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("HTTP listener on %s ports %d-%d: %w", host, lo, hi, errors.Join(errs...))
}

// Server is a running HTTP listener.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Serve serves h on ln until Close.
func Serve(ln net.Listener, h http.Handler, log *slog.Logger) *Server {
	s := &Server{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP listener failed", "err", err)
		}
	}()
	return s
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener, giving in-flight scrapes up to 5 seconds.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
