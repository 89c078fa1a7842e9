package health

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthEndpoints(t *testing.T) {
	h := NewHealth(time.Second)
	reg := NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_processed_total", Help: "x"})
	reg.MustRegister(c)
	c.Inc()
	var pgDown bool
	h.AddCheck("postgres", func(context.Context) error {
		if pgDown {
			return errors.New("connection refused")
		}
		return nil
	})
	h.RegisterLoop("relay", 50*time.Millisecond)
	srv := httptest.NewServer(Handler(h, reg))
	defer srv.Close()

	if code, _ := get(t, srv, "/readyz"); code != 200 {
		t.Fatalf("readyz = %d, want 200", code)
	}
	pgDown = true
	if code, body := get(t, srv, "/readyz"); code != 503 || !strings.Contains(body, "connection refused") {
		t.Fatalf("readyz with postgres down = %d %s", code, body)
	}
	pgDown = false
	h.SetDraining()
	if code, body := get(t, srv, "/readyz"); code != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("readyz while draining = %d %s", code, body)
	}

	h.Tick("relay")
	if code, _ := get(t, srv, "/healthz"); code != 200 {
		t.Fatalf("healthz right after tick = %d", code)
	}
	time.Sleep(80 * time.Millisecond)
	if code, body := get(t, srv, "/healthz"); code != 503 || !strings.Contains(body, "relay") {
		t.Fatalf("healthz with a silent loop = %d %s", code, body)
	}
	if code, body := get(t, srv, "/metrics"); code != 200 || !strings.Contains(body, "outbox_processed_total 1") {
		t.Fatalf("metrics = %d, missing counter", code)
	}
}

// TestReadinessMetrics: /metrics counts every change of the /readyz
// outcome, so a pod flapping between scrapes still shows.
func TestReadinessMetrics(t *testing.T) {
	h := NewHealth(time.Second)
	down := false
	h.AddCheck("postgres", func(context.Context) error {
		if down {
			return errors.New("connection refused")
		}
		return nil
	})
	srv := httptest.NewServer(Handler(h, NewRegistry()))
	defer srv.Close()
	if _, body := get(t, srv, "/metrics"); strings.Contains(body, "eventrelay_ready ") || !strings.Contains(body, "eventrelay_readiness_transitions_total 0") {
		t.Fatalf("before any probe: want no eventrelay_ready and 0 transitions:\n%s", grepLines(body, "eventrelay_"))
	}
	for _, d := range []bool{false, true, true, false, true} { // ready, down, down, ready, down: 3 changes
		down = d
		get(t, srv, "/readyz")
	}
	_, body := get(t, srv, "/metrics")
	if !strings.Contains(body, "eventrelay_ready 0") || !strings.Contains(body, "eventrelay_readiness_transitions_total 3") {
		t.Fatalf("after 3 changes ending not ready:\n%s", grepLines(body, "eventrelay_"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAdvisoryChecksReportWithoutFailingReadiness: a check added through
// Advisory shows under "degraded" and /readyz still passes; the view's
// loops and draining are the Health's own.
func TestAdvisoryChecksReportWithoutFailingReadiness(t *testing.T) {
	h := NewHealth(time.Second)
	engines := h.Advisory()
	engines.AddCheck("pubsub", func(context.Context) error { return errors.New("topic not found") })
	engines.RegisterLoop("outbox-relay", 50*time.Millisecond)
	srv := httptest.NewServer(Handler(h, NewRegistry()))
	defer srv.Close()

	if code, body := get(t, srv, "/readyz"); code != 200 || !strings.Contains(body, `"degraded":{"pubsub":"topic not found"}`) {
		t.Fatalf("readyz with an advisory check failing = %d %s, want 200 naming it degraded", code, body)
	}
	h.AddCheck("postgres", func(context.Context) error { return errors.New("connection refused") })
	if code, body := get(t, srv, "/readyz"); code != 503 || !strings.Contains(body, `"failures":{"postgres"`) || strings.Contains(body, `"failures":{"pubsub"`) {
		t.Fatalf("readyz with postgres down = %d %s", code, body)
	}
	time.Sleep(80 * time.Millisecond)
	if code, body := get(t, srv, "/healthz"); code != 503 || !strings.Contains(body, "outbox-relay") {
		t.Fatalf("healthz with the view's loop silent = %d %s", code, body)
	}
	engines.SetDraining()
	if !h.Draining() {
		t.Fatal("draining through the view did not reach the Health")
	}
}
