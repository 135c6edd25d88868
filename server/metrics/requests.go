package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stromdb/strom/internal/ferr"
	"github.com/stromdb/strom/internal/wire"
)

// Scopes of Fluss's server metric groups.
const (
	ScopeCoordinator  = "coordinator"
	ScopeTabletServer = "tabletserver"
)

// byteBuckets cover requests from a tiny metadata call to a 100 MiB produce batch.
var byteBuckets = prometheus.ExponentialBuckets(64, 4, 11) // 64 B .. 64 MiB

// timeBuckets cover 100µs to ~50 s (long polls wait up to the client's max wait).
var timeBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 15)

// requestMetrics implements wire.Observer for the listeners of one role.
type requestMetrics struct {
	requests      *prometheus.CounterVec
	errors        *prometheus.CounterVec
	requestBytes  *prometheus.HistogramVec
	responseBytes *prometheus.HistogramVec
	totalTime     *prometheus.HistogramVec
	connections   prometheus.Gauge
	accepted      prometheus.Counter
	authFailures  prometheus.Counter
	// delayedFetch and delayedWrite count deferred requests in flight (tablet server only).
	delayedFetch, delayedWrite prometheus.Gauge

	mu    sync.RWMutex
	byKey map[wire.APIKey]*apiMetrics // resolved label children, one per API
}

type apiMetrics struct {
	requests      prometheus.Counter
	requestBytes  prometheus.Observer
	responseBytes prometheus.Observer
	totalTime     prometheus.Observer
	name          string
}

var _ wire.Observer = (*requestMetrics)(nil)

func newRequestMetrics(reg prometheus.Registerer, scope string) *requestMetrics {
	p := "fluss_" + scope + "_request_"
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: p + "requests_total", Help: "Requests answered, per request type (Fluss requestsPerSecond).",
		}, []string{"request"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: p + "errors_total", Help: "Requests answered with an error response, per request type and Fluss error (Fluss errorsPerSecond).",
		}, []string{"request", "error"}),
		requestBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: p + "requestBytes", Help: "Size of request frames in bytes (Fluss requestBytes).", Buckets: byteBuckets,
		}, []string{"request"}),
		responseBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: p + "responseBytes", Help: "Size of response frames in bytes.", Buckets: byteBuckets,
		}, []string{"request"}),
		totalTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: p + "totalTime_seconds", Help: "Time from reading a request to writing its response, long-poll waits included (Fluss totalTimeMs).", Buckets: timeBuckets,
		}, []string{"request"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fluss_" + scope + "_connectionCount", Help: "Open client connections.",
		}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_" + scope + "_connections_total", Help: "Client connections accepted.",
		}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fluss_" + scope + "_authenticationFailures_total", Help: "AUTHENTICATE requests refused (wrong credentials or mechanism).",
		}),
		byKey: map[wire.APIKey]*apiMetrics{},
	}
	reg.MustRegister(m.requests, m.errors, m.requestBytes, m.responseBytes, m.totalTime, m.connections, m.accepted, m.authFailures)
	if scope == ScopeTabletServer {
		m.delayedFetch = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fluss_tabletserver_delayedFetchCount", Help: "FETCH_LOG requests parked in a long poll, waiting for data (Fluss delayedFetchCount).",
		})
		m.delayedWrite = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fluss_tabletserver_delayedWriteCount", Help: "PRODUCE_LOG and PUT_KV requests waiting for their data to be durable before the answer (Fluss delayedWriteCount).",
		})
		reg.MustRegister(m.delayedFetch, m.delayedWrite)
	}
	return m
}

func (m *requestMetrics) ConnectionOpened() { m.connections.Inc(); m.accepted.Inc() }
func (m *requestMetrics) ConnectionClosed() { m.connections.Dec() }

func (m *requestMetrics) api(k wire.APIKey) *apiMetrics {
	m.mu.RLock()
	a := m.byKey[k]
	m.mu.RUnlock()
	if a != nil {
		return a
	}
	name := requestName(k)
	a = &apiMetrics{
		name:          name,
		requests:      m.requests.WithLabelValues(name),
		requestBytes:  m.requestBytes.WithLabelValues(name),
		responseBytes: m.responseBytes.WithLabelValues(name),
		totalTime:     m.totalTime.WithLabelValues(name),
	}
	m.mu.Lock()
	m.byKey[k] = a
	m.mu.Unlock()
	return a
}

// RequestDone implements wire.Observer.
func (m *requestMetrics) RequestDone(k wire.APIKey, bytesIn, bytesOut int, elapsed time.Duration, code ferr.Code) {
	a := m.api(k)
	a.requests.Inc()
	a.requestBytes.Observe(float64(bytesIn))
	a.responseBytes.Observe(float64(bytesOut))
	a.totalTime.Observe(elapsed.Seconds())
	if code != 0 {
		m.errors.WithLabelValues(a.name, code.String()).Inc()
		if k == wire.Authenticate && code == ferr.AuthenticateException {
			m.authFailures.Inc()
		}
	}
}

// Deferred implements wire.Observer.
func (m *requestMetrics) Deferred(k wire.APIKey, delta int) {
	var g prometheus.Gauge
	switch k {
	case wire.FetchLog:
		g = m.delayedFetch
	case wire.ProduceLog, wire.PutKv:
		g = m.delayedWrite
	}
	if g != nil {
		g.Add(float64(delta))
	}
}
