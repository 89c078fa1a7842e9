package server_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestHTTPWaitAsLongAsTheRequestTimeout: with the request timeout equal
// to the longest consistency wait (the shipped 10s and 10s), a read with
// a token of a write no projector applied, asking for that wait or more,
// answers READ_MODEL_BEHIND like a shorter wait, not a timeout of the
// request.
func TestHTTPWaitAsLongAsTheRequestTimeout(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	d := newData(t, db.URL, catalogmigrations.Schema)
	const limit = time.Second
	reads := newReads(t, d, conf.ReadPath{Videos: true, WaitDefault: limit / 2, WaitMax: limit})
	svc := service.NewVideoService(biz.NewVideoUsecase(data.NewVideoRepo(d)), reads)
	sc := *serverConf
	sc.Timeout = limit
	ts := httptest.NewServer(server.NewHTTPServer(&sc, svc, data.NewHealth(d), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)))
	t.Cleanup(ts.Close)
	c := client{t: t, base: ts.URL}

	var created catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"unprojected"}`, &created)
	for _, wait := range []string{"1s", "5s"} {
		code, body := c.do("GET", "/v1/videos/"+created.GetVideo().GetId(), "",
			service.TokenHeader, created.GetConsistencyToken(), service.WaitHeader, wait)
		if code != 503 || !strings.Contains(string(body), catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND.String()) {
			t.Errorf("read with %s=%s: %d %s, want 503 %s", service.WaitHeader, wait, code, body,
				catalogv1.ErrorReason_ERROR_REASON_READ_MODEL_BEHIND)
		}
	}
}
