package elastic

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

func TestTopLevelFaultsAreTransient(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		estestOnly(t, e, "fault injection")
		e.ensure(t)
		ctx := context.Background()
		docs := []Doc{{ID: "a", Version: 1, Source: src("a", 1)}}
		for _, c := range []struct {
			status int
			want   errclass.Reason
		}{
			{429, errclass.RateLimited},
			{503, errclass.Unavailable},
			{500, errclass.ServerError},
			{504, errclass.Timeout},
		} {
			e.srv.Inject(c.status, time.Minute)
			res, err := e.c.BulkIndex(ctx, e.alias, docs)
			if res != nil || errclass.Of(err) != c.want || !errclass.IsTransient(err) {
				t.Fatalf("bulk under injected %d: res=%v err=%v, want transient %s", c.status, res, err, c.want)
			}
			var re *ResponseError
			if !errors.As(err, &re) || re.Status != c.status || re.Type == "" {
				t.Fatalf("injected %d: error detail %#v", c.status, re)
			}
			if err := e.c.Ping(ctx); errclass.Of(err) != c.want {
				t.Fatalf("ping under injected %d: %v", c.status, err)
			}
		}
		e.srv.Inject(0, 0)
		if r := e.bulk(t, docs...); r[0].Err != nil {
			t.Fatalf("after the fault cleared: %v", r[0].Err)
		}
	})
}

func TestItemFaultIsTransientAndIsolated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		estestOnly(t, e, "per-item fault injection")
		e.ensure(t)
		e.srv.InjectItem("hot", 429, 1)
		e.srv.InjectItem("broken", 500, 1)
		res := e.bulk(t,
			Doc{ID: "a", Version: 1, Source: src("a", 1)},
			Doc{ID: "hot", Version: 1, Source: src("hot", 1)},
			Doc{ID: "broken", Version: 1, Source: src("broken", 1)},
		)
		if res[0].Err != nil || errclass.Of(res[1].Err) != errclass.RateLimited || errclass.Of(res[2].Err) != errclass.ServerError {
			t.Fatalf("results: %+v", res)
		}
		res = e.bulk(t, Doc{ID: "hot", Version: 1, Source: src("hot", 1)})
		if res[0].Err != nil || res[0].Stale {
			t.Fatalf("retry of the rejected item: %+v", res[0])
		}
	})
}

func TestConnectionRefusedIsUnavailable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		estestOnly(t, e, "taking the server down")
		e.ensure(t)
		ctx := context.Background()
		if err := e.srv.SetDown(true); err != nil {
			t.Fatal(err)
		}
		// The first request may ride a pooled connection the server closed
		// (EOF); later ones are refused. Both are unavailable.
		for i := 0; i < 3; i++ {
			_, err := e.c.BulkIndex(ctx, e.alias, []Doc{{ID: "a", Version: 1, Source: src("a", 1)}})
			if errclass.Of(err) != errclass.Unavailable {
				t.Fatalf("bulk %d while down: %v, want unavailable", i, err)
			}
		}
		err := e.c.Ping(ctx)
		var opErr *net.OpError
		if errclass.Of(err) != errclass.Unavailable || !errors.As(err, &opErr) || opErr.Op != "dial" {
			t.Fatalf("ping while down: %v, want a refused connection classified unavailable", err)
		}
		if err := e.srv.SetDown(false); err != nil {
			t.Fatal(err)
		}
		if r := e.bulk(t, Doc{ID: "a", Version: 1, Source: src("a", 1)}); r[0].Err != nil {
			t.Fatalf("after coming back: %v", r[0].Err)
		}
	})
}

func TestSlowAnswerIsTimeout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, e *env) {
		estestOnly(t, e, "latency injection")
		c, err := New(Config{URL: e.srv.URL, RequestTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		e.srv.SetLatency(time.Second)
		defer e.srv.SetLatency(0)
		if err := c.Ping(context.Background()); errclass.Of(err) != errclass.Timeout {
			t.Fatalf("slow ping: %v, want timeout", err)
		}
	})
}

func TestNotElasticsearchIsUnavailable(t *testing.T) {
	imposter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"version":{"number":"8.15.0"}}`)) // no X-Elastic-Product header
	}))
	defer imposter.Close()
	c, err := New(Config{URL: imposter.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); errclass.Of(err) != errclass.Unavailable {
		t.Fatalf("ping of a non-Elasticsearch server: %v, want unavailable", err)
	}
}

func TestClosedPortIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here any more
	c, err := New(Config{URL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); errclass.Of(err) != errclass.Unavailable {
		t.Fatalf("ping of a closed port: %v, want unavailable", err)
	}
}
