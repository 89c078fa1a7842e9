package projection_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relay"
)

// The acceptance criteria speak of 30 s of 429s and 10 s of Postgres
// outage; the defaults keep the suite fast. Run the long versions with
// go test ./projection -run Fault -args -es-429-for=30s -pg-outage-for=10s
var (
	es429For    = flag.Duration("es-429-for", 3*time.Second, "how long Elasticsearch answers 429 in the rate-limit test")
	pgOutageFor = flag.Duration("pg-outage-for", 3*time.Second, "how long Postgres is down in the outage test")
)

// wave returns the events of versions from..to of videos, deleting the
// video at `to` when del is set.
func wave(t *testing.T, videos []uuid.UUID, from, to int64, del bool) []projectiontest.Msg {
	var out []projectiontest.Msg
	for _, id := range videos {
		for v := from; v <= to; v++ {
			out = append(out, projectiontest.Event(t, id, v, del && v == to))
		}
	}
	return out
}

func TestFaultSearchRateLimitedPostgresStaysCurrentSearchCatchesUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv, es := h.search(batchConfig(20), elastictest.Options{}, nil)
	h.videos(batchConfig(20))

	videos := make([]uuid.UUID, 20)
	for i := range videos {
		videos[i] = uuid.New()
	}
	// 429 from now until Postgres is current and at least -es-429-for has
	// passed; then Elasticsearch recovers.
	srv.Inject(http.StatusTooManyRequests, time.Hour)
	start := time.Now()
	h.publish(wave(t, videos, 1, 2, false)...)
	h.eventually(30*time.Second, "Postgres current while Elasticsearch answers 429", func() bool {
		return h.inboxCount(catproj.VideosConsumer) == 40
	})
	h.publish(wave(t, videos[:5], 3, 3, true)...) // five deletions during the window
	h.eventually(30*time.Second, "Postgres current again", func() bool {
		return h.inboxCount(catproj.VideosConsumer) == 45
	})
	pgCurrent := time.Since(start)
	if n := h.inboxCount(catproj.SearchConsumer); n != 0 {
		t.Fatalf("search applied %v events while every request was answered 429", n)
	}
	// Search's failures are counted when its messages settle, which may
	// come after Postgres is current.
	h.eventually(30*time.Second, "rate_limited failures counted for search", func() bool {
		return h.metric("projector_failed_total", "search", "reason", "rate_limited") > 0
	})
	time.Sleep(*es429For - time.Since(start))
	srv.Inject(0, 0)
	recovered := time.Now()

	h.eventually(60*time.Second, "search caught up", func() bool { return h.inboxCount(catproj.SearchConsumer) == 45 })
	for i, id := range videos {
		src, v, found := h.doc(es, id)
		wantV, wantDeleted := int64(2), false
		if i < 5 {
			wantV, wantDeleted = 3, true
		}
		if !found || v != wantV || (src["deleted"] == true) != wantDeleted {
			t.Errorf("video %d: search document v%d deleted=%v (found %v), want v%d deleted=%v", i, v, src["deleted"], found, wantV, wantDeleted)
		}
	}
	if n := h.metric("projector_dead_lettered_total", "search"); n != 0 {
		t.Fatalf("%v events dead-lettered: 429 is transient", n)
	}
	t.Logf("429 for %s: Postgres current after %s; search caught up %s after Elasticsearch recovered",
		recovered.Sub(start).Round(time.Millisecond), pgCurrent.Round(time.Millisecond), time.Since(recovered).Round(time.Millisecond))
}

// TestFaultReceiveErrorIsRetriedOtherProjectionKeepsApplying: the search
// subscription's StreamingPull fails with an error the client does not
// retry itself (code Unknown, as seen after a kill -9 of the projector on
// the emulator). The receiver starts Receive again with backoff instead of
// returning (which stopped the whole process); the videos projection keeps
// applying; /readyz names the failing receive and its reason; once the
// error stops, search catches up and readiness returns.
func TestFaultReceiveErrorIsRetriedOtherProjectionKeepsApplying(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, es := h.search(batchConfig(20), elastictest.Options{}, nil)
	h.videos(batchConfig(20))
	h.ps.FailStreams("search", status.Error(codes.Unknown, "injected: stream broke"))

	videos := make([]uuid.UUID, 10)
	for i := range videos {
		videos[i] = uuid.New()
	}
	h.publish(wave(t, videos, 1, 2, false)...)
	h.eventually(30*time.Second, "videos applied while search cannot receive", func() bool {
		return h.inboxCount(catproj.VideosConsumer) == 20
	})
	h.eventually(30*time.Second, "search receive failures counted and retried", func() bool {
		return h.metric("projector_receive_errors_total", "search", "reason", "server_error") >= 3
	})
	if v := h.metric("projector_receiving", "search"); v != 0 {
		t.Errorf("projector_receiving{search} = %v while failing, want 0", v)
	}
	if v := h.metric("projector_receiving", "videos"); v != 1 {
		t.Errorf("projector_receiving{videos} = %v, want 1", v)
	}
	rep := h.health.Ready(context.Background())
	if rep.OK || !strings.Contains(rep.Failures["receive/search"], "server_error") ||
		!strings.Contains(rep.Failures["receive/search"], "injected: stream broke") {
		t.Errorf("readiness while search cannot receive: %+v, want receive/search failing with the reason", rep)
	}
	if _, bad := rep.Failures["receive/videos"]; bad {
		t.Errorf("readiness blames videos: %+v", rep)
	}
	if n := h.inboxCount(catproj.SearchConsumer); n != 0 {
		t.Fatalf("search applied %d events through a failing stream", n)
	}

	h.ps.FailStreams("search", nil)
	h.publish(wave(t, videos, 3, 3, false)...)
	h.eventually(60*time.Second, "search caught up after the error stopped", func() bool {
		return h.inboxCount(catproj.SearchConsumer) == 30
	})
	h.eventually(30*time.Second, "readiness back", func() bool { return h.health.Ready(context.Background()).OK })
	if v := h.metric("projector_receiving", "search"); v != 1 {
		t.Errorf("projector_receiving{search} = %v after recovery, want 1", v)
	}
	for _, id := range videos {
		if _, v, found := h.doc(es, id); !found || v != 3 {
			t.Errorf("search document %s: v%d found=%v, want v3", id, v, found)
		}
	}
	if n := h.inboxCount(catproj.VideosConsumer); n != 30 {
		t.Errorf("videos inbox %d, want 30", n)
	}
	if n := h.metric("projector_dead_lettered_total", "search"); n != 0 {
		t.Errorf("%v search events dead-lettered: a receive error is not the events' fault", n)
	}
}

func TestFaultSearchMappingErrorIsDeadLettered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// An index whose mapping cannot take the documents: title is a long.
	conflicting := func(es *elastic.Client) {
		body := []byte(`{"mappings":{"properties":{"title":{"type":"long"}}}}`)
		if _, err := es.EnsureIndex(context.Background(), catproj.DefaultAlias, body); err != nil {
			t.Fatal(err)
		}
	}
	h.search(batchConfig(10), elastictest.Options{}, conflicting)
	h.videos(batchConfig(10))
	id := uuid.New()
	m := projectiontest.Event(t, id, 1, false)
	h.publish(m)
	dl := h.deadLetters("search", 1, 15*time.Second)[0]
	if dl.Attributes["error_reason"] != "mapping_error" || dl.Attributes["event_id"] != m.EventID.String() {
		t.Fatalf("dead letter attributes %v, want error_reason mapping_error for %s", dl.Attributes, m.EventID)
	}
	h.eventually(10*time.Second, "Postgres applied it regardless", func() bool { _, ok := h.row(id); return ok })
}

// privatePostgres starts a Postgres of this test's own (the shared one is
// never stopped) and returns its URL and a stop/start pair.
func privatePostgres(t *testing.T) (url string, stop, start func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "projector-pg-outage-")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pg := func(action string) string {
		cmd := exec.Command("../../../scripts/pg.sh", action)
		cmd.Env = append(os.Environ(), "EVENTRELAY_PG_DIR="+dir, fmt.Sprintf("EVENTRELAY_PG_PORT=%d", port),
			"EVENTRELAY_PG_FSYNC=off", "EVENTRELAY_PG_SYNC_COMMIT=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/pg.sh %s: %v\n%s", action, err, out)
		}
		return string(out)
	}
	out := pg("start")
	t.Cleanup(func() {
		pg("stop")
		os.RemoveAll(dir)
	})
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "export DATABASE_URL="); ok {
			url = strings.Trim(v, "'")
		}
	}
	if url == "" {
		t.Fatalf("no DATABASE_URL in pg.sh output:\n%s", out)
	}
	return url, func() { pg("stop") }, func() { pg("start") }
}

func TestFaultPostgresOutageLosesNothingAndReadyzFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Postgres")
	}
	t.Parallel()
	ctx := context.Background()
	url, stopPG, startPG := privatePostgres(t)
	pc, err := relay.PoolConfig(url, catalogmigrations.Schema)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns, pc.ConnConfig.ConnectTimeout = 10, time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := migrations.Up(ctx, pool, catalogmigrations.Schema, catalogmigrations.Sets...); err != nil {
		t.Fatal(err)
	}

	h := newHarnessOnPool(t, pool)
	h.health.AddCheck("postgres", func(ctx context.Context) error { return pool.Ping(ctx) })
	opsSrv := httptest.NewServer(health.Handler(h.health, h.reg))
	t.Cleanup(opsSrv.Close)
	readyz := func() int {
		resp, err := http.Get(opsSrv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	h.videos(batchConfig(20))

	videos := make([]uuid.UUID, 20)
	for i := range videos {
		videos[i] = uuid.New()
	}
	h.publish(wave(t, videos, 1, 1, false)...)
	h.eventually(15*time.Second, "first wave applied", func() bool { return h.inboxCount(catproj.VideosConsumer) == 20 })
	if c := readyz(); c != 200 {
		t.Fatalf("/readyz = %d with Postgres up", c)
	}

	stopPG()
	down := time.Now()
	h.publish(wave(t, videos, 2, 3, false)...) // arrives while Postgres is down
	h.eventually(5*time.Second, "/readyz 503", func() bool { return readyz() == 503 })
	for time.Since(down) < *pgOutageFor {
		if c := readyz(); c != 503 {
			t.Fatalf("/readyz = %d while Postgres is down", c)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := h.metric("projector_failed_total", "videos", "reason", "unavailable"); n == 0 {
		t.Fatal("no unavailable failures counted while Postgres was down")
	}
	startPG()
	h.eventually(30*time.Second, "everything applied after Postgres returned", func() bool {
		return h.inboxCount(catproj.VideosConsumer) == 60
	})
	h.eventually(5*time.Second, "/readyz 200", func() bool { return readyz() == 200 })
	for _, id := range videos {
		if r, ok := h.row(id); !ok || r.Version != 3 {
			t.Fatalf("video %s at v%d after the outage, want v3", id, r.Version)
		}
	}
	if n := h.metric("projector_dead_lettered_total", "videos"); n != 0 {
		t.Fatalf("%v events dead-lettered by a Postgres outage", n)
	}
}
