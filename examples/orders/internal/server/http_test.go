package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
	"github.com/eventrelay/eventrelay/examples/orders/internal/server"
)

// TestHTTPRoutes: the JSON routes answer like the gRPC methods (Kratos
// error bodies with the reason and the field).
func TestHTTPRoutes(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	svc := ordertest.NewService(t, db.Pool)
	srv := server.NewHTTPServer("127.0.0.1:0", 10*time.Second, svc)
	u, err := srv.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start(context.Background()) //nolint:errcheck // returns when stopped
	t.Cleanup(func() { srv.Stop(context.Background()) })
	base := u.String()

	// The caller's trace context reaches the outbox row (and from there
	// the relay's and the projector's spans).
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	code, body := call(t, "POST", base+"/v1/orders", `{"customer_id":"c-1","amount_cents":"1999","currency":"EUR"}`,
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	var placed struct {
		Order struct {
			ID      string `json:"id"`
			Version string `json:"version"`
		} `json:"order"`
		EventID string `json:"eventId"`
	}
	if err := json.Unmarshal([]byte(body), &placed); code != http.StatusOK || err != nil || placed.EventID == "" {
		t.Fatalf("POST /v1/orders: %d %s (%v)", code, body, err)
	}
	var headers map[string]string
	if err := db.Pool.QueryRow(context.Background(), "SELECT headers FROM outbox_events WHERE event_id = $1", placed.EventID).Scan(&headers); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(headers["traceparent"], traceID) {
		t.Errorf("outbox row traceparent %q, want trace %s", headers["traceparent"], traceID)
	}
	if code, body := call(t, "POST", base+"/v1/orders/"+placed.Order.ID+"/pay", `{"payment_ref":"psp-1"}`); code != http.StatusOK || !strings.Contains(body, `"version":"2"`) {
		t.Errorf("POST pay: %d %s, want 200 at version 2", code, body)
	}
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/v1/orders", `{"customer_id":"c-1","amount_cents":"1","currency":"eur"}`, 400, `"field":"currency"`},
		{"GET", "/v1/orders/" + uuid.NewString(), "", 404, biz.ReasonOrderNotFound},
		{"GET", "/v1/orders/not-a-uuid", "", 400, `"field":"id"`},
		{"POST", "/v1/orders/" + placed.Order.ID + "/pay", `{"payment_ref":"again"}`, 409, biz.ReasonStateConflict},
		{"GET", "/v1/customers/c-1/summary", "", 200, `"customerId":"c-1"`},
		{"GET", "/v1/customers/c-1/orders?status=ORDER_STATUS_PAID", "", 503, biz.ReasonSearchDisabled}, // no search read path here
	} {
		code, body := call(t, c.method, base+c.path, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s, want %d containing %s", c.method, c.path, code, body, c.code, c.want)
		}
	}
}

func call(t *testing.T, method, u, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
