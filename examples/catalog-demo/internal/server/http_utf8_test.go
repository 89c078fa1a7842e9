package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestHTTPInvalidUTF8IsA400NamingTheField: invalid UTF-8 in a string
// field, in a field name, and an unknown enum name whose quoted 80-byte
// cut falls inside a multi-byte character are 400s naming the field with
// a valid UTF-8 message (an error text carrying the bytes would be refused
// by protojson and answered as a 500 with an empty body), and every error
// answer is logged once: a refusal made while binding as "error answer",
// an error of the handler by the middleware alone.
func TestHTTPInvalidUTF8IsA400NamingTheField(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	svc, d := newService(t, db.URL)
	logs := &logBuffer{}
	ts := httptest.NewServer(server.NewHTTPServer(serverConf, svc, data.NewHealth(d), prometheus.NewRegistry(), slog.New(slog.NewJSONHandler(logs, nil))))
	t.Cleanup(ts.Close)
	c := client{t: t, base: ts.URL}
	uploader := uuid.NewString()

	// `"` + 78 bytes + "é": the 80th byte is the first half of é.
	splitEnum := strings.Repeat("A", 78) + "é" + strings.Repeat("B", 10)
	cases := []struct{ name, body, field string }{
		{"string field", `{"uploader_id":"` + uploader + `","title":"bad ` + "\xff\xfe" + ` title"}`, "title"},
		{"enum cut inside a character", `{"uploader_id":"` + uploader + `","title":"t","status":"` + splitEnum + `"}`, "status"},
		{"field name", `{"uploader_id":"` + uploader + `","title":"t","` + "\xffx" + `":1}`, "\uFFFDx"},
	}
	for _, tc := range cases {
		e := c.fails("POST", "/v1/videos", tc.body, 400, "ERROR_REASON_INVALID_ARGUMENT")
		if e.Metadata["field"] != tc.field || !strings.HasPrefix(e.Message, tc.field+": ") || !utf8.ValidString(e.Message) {
			t.Errorf("%s: field %q, message %q; want field %q named first, valid UTF-8", tc.name, e.Metadata["field"], e.Message, tc.field)
		}
	}
	c.fails("GET", "/v1/videos/"+uuid.NewString(), "", 404, "ERROR_REASON_VIDEO_NOT_FOUND")

	answers := logs.records(t, "error answer")
	if len(answers) != len(cases) {
		t.Fatalf("%d error answers logged, want %d (the binding refusals): %v", len(answers), len(cases), answers)
	}
	for i, tc := range cases {
		if a := answers[i]; a["code"] != float64(400) || a["field"] != tc.field || a["path"] != "/v1/videos" {
			t.Errorf("%s: logged %v, want code 400, field %q, path /v1/videos", tc.name, a, tc.field)
		}
	}
	var notFound []map[string]any
	for _, rec := range logs.records(t, "request") {
		if rec["code"] == float64(404) {
			notFound = append(notFound, rec)
		}
	}
	if len(notFound) != 1 || notFound[0]["reason"] != "ERROR_REASON_VIDEO_NOT_FOUND" {
		t.Errorf("not found: logged %v by the middleware, want one record with code 404 and its reason", notFound)
	}
}

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the records of message msg, in order.
func (b *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
