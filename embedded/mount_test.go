package embedded_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-kratos/kratos/v2/transport"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/relay"
)

// TestNewMountsHealth: the health surface is served on the service's
// HTTP server beside its own routes (a path it routes itself stays its
// own), and on a server of its own when the service has no HTTP server.
func TestNewMountsHealth(t *testing.T) {
	t.Parallel()
	pc, err := relay.PoolConfig("postgres://nobody@127.0.0.1:1/none", "shop")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc) // never connects
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	client := gpubsubtest.New(t).Client
	api := khttp.NewServer(khttp.Address("127.0.0.1:0"))
	api.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the service's own") }) //nolint:errcheck
	e, err := embedded.New(pool, client, embedded.Options{Name: "shop", Config: embedded.Config{HTTPAddr: "127.0.0.1:0"},
		Servers: func(*embedded.Engines) ([]transport.Server, error) { return []transport.Server{api}, nil }})
	if err != nil || len(e.Servers) != 1 {
		t.Fatalf("New: %d servers, %v; want the service's one", len(e.Servers), err)
	}
	for path, want := range map[string]string{"/healthz": "the service's own", "/metrics": "eventrelay_readiness_transitions_total"} {
		rec := httpRecorder(t, api, path)
		if !strings.Contains(rec, want) {
			t.Errorf("GET %s: %.200s, want %q", path, rec, want)
		}
	}
	e, err = embedded.New(pool, client, embedded.Options{Name: "shop", Config: embedded.Config{HTTPAddr: "127.0.0.1:0"}})
	if err != nil || len(e.Servers) != 1 {
		t.Fatalf("New without servers: %d servers, %v; want the health server", len(e.Servers), err)
	}
	if hs, ok := e.Servers[0].(*khttp.Server); !ok || !strings.Contains(httpRecorder(t, hs, "/metrics"), "eventrelay_readiness_transitions_total") {
		t.Errorf("the health server of a service without HTTP: %T", e.Servers[0])
	}
}

// httpRecorder is the body srv answers GET path with.
func httpRecorder(t *testing.T, srv *khttp.Server, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Body.String()
}
