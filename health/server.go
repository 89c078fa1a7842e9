package health

import (
	"encoding/json"
	"net/http"

	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a Prometheus registry with the Go runtime and process
// collectors registered.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves /healthz, /readyz and /metrics. /metrics adds the
// readiness series (eventrelay_ready, eventrelay_readiness_transitions_total)
// to reg's.
func Handler(h *Health, reg prometheus.Gatherer) http.Handler {
	own := prometheus.NewRegistry()
	own.MustRegister(&h.ready)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeReport(w, h.Live())
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		rep := h.Ready(r.Context())
		h.ready.record(rep.OK)
		writeReport(w, rep)
	})
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{reg, own}, promhttp.HandlerOpts{}))
	return mux
}

// NewServer returns a Kratos HTTP server (a transport.Server) on addr
// serving Handler.
func NewServer(addr string, h *Health, reg prometheus.Gatherer) *khttp.Server {
	srv := khttp.NewServer(khttp.Address(addr))
	srv.HandlePrefix("/", Handler(h, reg))
	return srv
}

func writeReport(w http.ResponseWriter, r Report) {
	w.Header().Set("Content-Type", "application/json")
	if !r.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(r)
}
