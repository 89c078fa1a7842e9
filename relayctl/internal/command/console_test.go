package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

// consoleUnderTest is a console on an httptest server whose operator is
// set by the identity header.
type consoleUnderTest struct {
	t   *testing.T
	c   *Console
	srv *httptest.Server
	who string
}

func newConsole(t *testing.T, env map[string]string, write bool, pubsubFile string) *consoleUnderTest {
	t.Helper()
	c, err := NewConsole(t.Context(), ConsoleConfig{
		DatabaseURL: env["DATABASE_URL"], Schema: testSchema, PubSubFile: pubsubFile, Write: write,
		IdentityHeader: "X-Goog-Authenticated-User-Email", Hooks: itemHooks(), SampleEvery: 50 * time.Millisecond,
		Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		t.Fatalf("NewConsole: %v", err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(func() { srv.Close(); c.Close() })
	return &consoleUnderTest{t: t, c: c, srv: srv, who: "alice@example.com"}
}

func (u *consoleUnderTest) do(method, path string, form url.Values) (int, string) {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.srv.URL+path, body)
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("X-Goog-Authenticated-User-Email", "accounts.google.com:"+u.who)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends a form with the operator's CSRF token.
func (u *consoleUnderTest) post(path string, form url.Values) (int, string) {
	u.t.Helper()
	form.Set("csrf", u.c.csrfToken(u.who))
	return u.do(http.MethodPost, path, form)
}

func failRows(t *testing.T, db *testDB, reason string, n int) []int64 {
	t.Helper()
	var ids []int64
	for _, w := range seedOutbox(t, db, n) {
		exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), attempts = 3, error_reason = $2, last_error = 'boom ' || $2,
			error_history = jsonb_build_array(jsonb_build_object('at', now(), 'reason', $2, 'error', 'boom', 'attempt', 3, 'worker', 'w1'))
			WHERE id = $1`, w.ID, reason)
		ids = append(ids, w.ID)
	}
	return ids
}

func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

// TestConsoleReadOnlyRefusesEveryMutation: without write access every
// mutating request is refused and nothing changes; with it, a request
// without the CSRF token, or from another site, is refused too.
func TestConsoleReadOnlyRefusesEveryMutation(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	ids := failRows(t, db, "payload_invalid", 2)
	publish(t, ps, "items.events.dlq-view", &pubsub.Message{Data: []byte("x"), Attributes: newPoison(t, "mapping_error", false).attrs})
	audited := lastAuditID(t, db) // pubsub ensure's
	ro := newConsole(t, env, false, pubsubConfig)
	forms := map[string]url.Values{
		"/failed/replay":  {"ids": {idList(ids)}, "why": {"INC-1"}},
		"/failed/resolve": {"ids": {idList(ids)}, "why": {"INC-1"}},
		"/dlq/replay":     {"subscription": {"items.events.dlq-view"}, "ids": {"x"}, "why": {"INC-1"}},
		"/dlq/purge":      {"subscription": {"items.events.dlq-view"}, "ids": {"x"}, "why": {"INC-1"}},
		"/seek":           {"subscription": {"items.view"}, "time": {"1m"}, "why": {"INC-1"}},
		"/rebuild":        {"projection": {"item-view"}, "why": {"INC-1"}, "confirm": {"1"}},
	}
	for _, path := range MutatingRoutes {
		if code, body := ro.post(path, forms[path]); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("read-only POST %s: %d %q, want 403", path, code, body)
		}
		for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
			if code, _ := ro.do(m, path, forms[path]); code != http.StatusForbidden {
				t.Errorf("read-only %s %s: %d, want 403", m, path, code)
			}
		}
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed'`); n != 2 {
		t.Errorf("failed rows after refused mutations: %d, want 2", n)
	}
	if n := lastAuditID(t, db); n != audited {
		t.Errorf("audit rows after refused mutations: %d, want 0", n)
	}
	if n := dlqCount(t, env, []string{"--subscription", "items.events.dlq-view"}); n != 1 {
		t.Errorf("dead letters after refused mutations: %d, want 1", n)
	}

	rw := newConsole(t, env, true, pubsubConfig)
	if code, _ := rw.do(http.MethodPost, "/failed/replay", url.Values{"ids": {idList(ids)}, "why": {"INC-1"}}); code != http.StatusForbidden {
		t.Errorf("POST without CSRF token: %d, want 403", code)
	}
	if code, _ := rw.do(http.MethodPost, "/failed/replay", url.Values{"ids": {idList(ids)}, "why": {"INC-1"}, "csrf": {rw.c.csrfToken("mallory")}}); code != http.StatusForbidden {
		t.Errorf("POST with another operator's CSRF token: %d, want 403", code)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed'`); n != 2 {
		t.Errorf("failed rows after CSRF refusals: %d, want 2", n)
	}
	// Without the trusted header the console answers nothing.
	resp, err := http.Get(rw.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("request without the identity header: %d, want 401", resp.StatusCode)
	}
}

// TestConsoleNeverRendersDatabasePassword: a password planted in the
// database URL appears in no page, not even in an error.
func TestConsoleNeverRendersDatabasePassword(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	const planted = "Pl4nted-S3cret-pw"
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), planted) // trust auth: any password connects
	env["DATABASE_URL"] = u.String()
	ids := failRows(t, db, "unavailable", 1)
	publish(t, ps, "items.events.dlq-view", &pubsub.Message{Data: []byte("garbage"), Attributes: newPoison(t, "mapping_error", false).attrs})
	c := newConsole(t, env, true, pubsubConfig)
	// Daemons' readiness URLs carrying credentials, one unreachable (its
	// error quotes the URL).
	c.c.cfg.Daemons = map[string]string{"publisher-0": "http://admin:" + planted + "@127.0.0.1:1/readyz",
		"projector-0": "http://admin:Zq9@" + planted + "@127.0.0.1:1/readyz"}
	pages := []string{"/", "/failed", "/failed?reason=unavailable", "/failed/row?id=" + fmt.Sprint(ids[0]), "/failed/replay?ids=" + fmt.Sprint(ids[0]),
		"/failed/resolve?ids=" + fmt.Sprint(ids[0]), "/dlq", "/dlq?subscription=items.events.dlq-view", "/replays", "/audit",
		"/failed?since=yesterday", "/failed/row?id=nope", "/static/console.css", "/static/console.js"}
	for _, p := range pages {
		code, body := c.do(http.MethodGet, p, nil)
		if strings.Contains(body, planted) {
			t.Errorf("GET %s (%d) renders the database password", p, code)
		}
		if code >= 500 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	if code, body := c.post("/dlq/peek", url.Values{"subscription": {"items.events.dlq-view"}}); strings.Contains(body, planted) || code != http.StatusOK {
		t.Errorf("POST /dlq/peek (%d) renders the password (%t) or fails", code, strings.Contains(body, planted))
	}
	// A command that fails quoting its connection string.
	bad := *u
	bad.Host = "127.0.0.1:1"
	c.c.cfg.DatabaseURL = bad.String()
	code, body := c.post("/seek", url.Values{"subscription": {"items.view"}, "time": {"1m"}, "why": {"INC-9"}, "confirm": {"1"}})
	if strings.Contains(body, planted) || code == http.StatusOK {
		t.Errorf("failed seek (%d) renders the password: %t", code, strings.Contains(body, planted))
	}
	c.c.cfg.DatabaseURL = u.String()
	// A password with an unescaped @: refused at start, the password not
	// quoted (a lenient parser would look up its tail as a host name).
	for _, dsn := range []string{"postgres://" + u.User.Username() + ":Zq9@" + planted + "@" + u.Host + u.Path,
		"postgres://" + u.User.Username() + ":" + planted + "@@" + u.Host + u.Path} {
		_, err := NewConsole(t.Context(), ConsoleConfig{DatabaseURL: dsn, Schema: testSchema, Hooks: itemHooks()})
		if err == nil || strings.Contains(err.Error(), planted) {
			t.Errorf("NewConsole with an unescaped @ in the password: %v; want a refusal without the password", err)
		}
	}
	resp, err := http.Get(c.srv.URL + "/")
	if err == nil {
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
		resp.Body.Close()
	}
}

// auditRows are the audit rows of a command without their id and time:
// what the CLI and the console must record alike.
func auditRows(t *testing.T, db *testDB, since auditMark) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		SELECT 'admin_audit|' || command || '|' || requested_by || '|' || reason || '|' || details::text FROM admin_audit WHERE id > $1
		UNION ALL
		SELECT 'outbox_replays|' || requested_by || '|' || reason || '|' || filter::text || '|' || from_status || '|' || row_count || '|' || array_to_string(event_ids, ',')
		FROM outbox_replays WHERE id > $2 ORDER BY 1`, since.admin, since.replays)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// auditMark is the last id of each audit table.
type auditMark struct{ admin, replays int }

func lastAuditID(t *testing.T, db *testDB) auditMark {
	return auditMark{count(t, db, `SELECT coalesce(max(id), 0)::int FROM admin_audit`), count(t, db, `SELECT coalesce(max(id), 0)::int FROM outbox_replays`)}
}

// TestConsoleMutationsAuditLikeTheCLI: each console mutation leaves the
// audit record the equivalent relayctl command leaves, field for field
// (the same rows acted on twice: once by the CLI, reset, once by the
// console).
func TestConsoleMutationsAuditLikeTheCLI(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	c := newConsole(t, env, true, pubsubConfig)
	const by, why = "alice@example.com", "INC-42 dependency back"
	ids := failRows(t, db, "unavailable", 2)
	reset := func() {
		exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), resolved_at = NULL WHERE id = ANY($1)`, ids)
	}
	compare := func(what string, cli func(), console func()) {
		t.Helper()
		before := lastAuditID(t, db)
		cli()
		fromCLI := auditRows(t, db, before)
		before = lastAuditID(t, db)
		console()
		fromConsole := auditRows(t, db, before)
		if len(fromCLI) == 0 || strings.Join(fromCLI, "\n") != strings.Join(fromConsole, "\n") {
			t.Errorf("%s: audit differs\nCLI:     %q\nconsole: %q", what, fromCLI, fromConsole)
		}
	}
	compare("replay by ids", func() {
		if r := relayctl(t, env, "replay", "--ids", idList(ids), "--by", by, "--why", why); r.code != ExitOK {
			t.Fatalf("relayctl replay: %d", r.code)
		}
		reset()
	}, func() {
		if code, body := c.post("/failed/replay", url.Values{"ids": {fmt.Sprint(ids[0]), fmt.Sprint(ids[1])}, "why": {why}}); code != http.StatusSeeOther {
			t.Fatalf("console replay: %d %s", code, body)
		}
		reset()
	})
	compare("replay by reason", func() {
		if r := relayctl(t, env, "replay", "--ids", idList(ids), "--reason", "unavailable", "--by", by, "--why", why); r.code != ExitOK {
			t.Fatalf("relayctl replay: %d", r.code)
		}
		reset()
	}, func() {
		// The confirmation of a replay by filter, as its preview renders it:
		// the filter and the rows shown.
		code, page := c.do(http.MethodGet, "/failed/replay?reason=unavailable", nil)
		form := url.Values{"why": {why}}
		for _, m := range regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
			if m[1] != "csrf" && m[2] != "" {
				form.Add(m[1], m[2])
			}
		}
		if code != http.StatusOK || form.Get("pin") == "" || len(form["ids"]) != 2 {
			t.Fatalf("replay preview by reason: %d, confirmation form %v", code, form)
		}
		if code, body := c.post("/failed/replay", form); code != http.StatusSeeOther {
			t.Fatalf("console replay: %d %s", code, body)
		}
		reset()
	})
	compare("resolve", func() {
		if r := relayctl(t, env, "failed", "resolve", "--ids", idList(ids), "--by", by, "--why", why); r.code != ExitOK {
			t.Fatalf("relayctl failed resolve: %d", r.code)
		}
		reset()
	}, func() {
		if code, body := c.post("/failed/resolve", url.Values{"ids": {idList(ids)}, "why": {why}}); code != http.StatusSeeOther {
			t.Fatalf("console resolve: %d %s", code, body)
		}
	})
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'resolved' AND id = ANY($1)`, ids); n != 2 {
		t.Errorf("rows resolved by the console: %d, want 2", n)
	}

	// Dead letters: the same message published twice, one handled by
	// each; the records differ only in the message id, masked.
	dlq := []string{"--subscription", "items.events.dlq-view"}
	for _, action := range []string{"replay", "purge"} {
		p := newPoison(t, "mapping_error", true)
		publish(t, ps, "items.events.dlq-view", &pubsub.Message{Data: p.body, Attributes: p.attrs}, &pubsub.Message{Data: p.body, Attributes: p.attrs})
		mids := dlqMessageIDs(t, env, dlq)
		if len(mids) != 2 {
			t.Fatalf("dead letters: %v, want 2", mids)
		}
		mask := regexp.MustCompile(`"message_id": ?"[^"]*"|"ids": ?\["[^"]*"\]`)
		before := lastAuditID(t, db)
		if r := relayctl(t, env, append([]string{"dlq", action, "-f", pubsubConfig, "--ids", mids[0], "--by", by, "--why", why}, dlq...)...); r.code != ExitOK {
			t.Fatalf("relayctl dlq %s: %d", action, r.code)
		}
		fromCLI := mask.ReplaceAllString(strings.Join(auditRows(t, db, before), "\n"), "<id>")
		before = lastAuditID(t, db)
		if code, body := c.post("/dlq/"+action, url.Values{"subscription": {"items.events.dlq-view"}, "ids": {mids[1]}, "why": {why}, "confirm": {"1"}}); code != http.StatusSeeOther {
			t.Fatalf("console dlq %s: %d %s", action, code, body)
		}
		fromConsole := mask.ReplaceAllString(strings.Join(auditRows(t, db, before), "\n"), "<id>")
		if fromCLI == "" || fromCLI != fromConsole {
			t.Errorf("dlq %s: audit differs\nCLI:     %s\nconsole: %s", action, fromCLI, fromConsole)
		}
	}
	if n := dlqCount(t, env, dlq); n != 0 {
		t.Errorf("dead letters left: %d, want 0", n)
	}

	// Seek to a time: the target differs by the seconds between the runs.
	mask := regexp.MustCompile(`"target": ?"[^"]*"`)
	before := lastAuditID(t, db)
	if r := relayctl(t, env, "seek", "--subscription", "items.view", "--time", "2026-01-02T03:04:05Z", "--by", by, "--why", why); r.code != ExitOK {
		t.Fatalf("relayctl seek: %d", r.code)
	}
	fromCLI := strings.Join(auditRows(t, db, before), "\n")
	before = lastAuditID(t, db)
	if code, body := c.post("/seek", url.Values{"subscription": {"items.view"}, "time": {"2026-01-02T03:04:05Z"}, "why": {why}, "confirm": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("console seek: %d %s", code, body)
	}
	fromConsole := strings.Join(auditRows(t, db, before), "\n")
	if fromCLI == "" || mask.ReplaceAllString(fromCLI, "") != mask.ReplaceAllString(fromConsole, "") {
		t.Errorf("seek: audit differs\nCLI:     %s\nconsole: %s", fromCLI, fromConsole)
	}
}

func dlqMessageIDs(t *testing.T, env map[string]string, dlq []string) []string {
	t.Helper()
	r := relayctlQuiet(t, env, append([]string{"dlq", "list", "--json"}, dlq...)...)
	var got []dlqMessage
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("dlq list: %v", err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.MessageID)
	}
	return ids
}

// TestRedriveMovesTransientFailuresBackOnceTheTopicAnswers: rows failed
// as unavailable stay failed while Pub/Sub is down and while their topic
// is missing; once it answers they are re-driven at the configured rate and audited as done
// by the policy; deterministic failures are never touched.
func TestRedriveMovesTransientFailuresBackOnceTheTopicAnswers(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	db := newDB(t)
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL})
	transient := failRows(t, db, "unavailable", 5)
	deterministic := failRows(t, db, "payload_invalid", 2)
	pool, err := (&dbFlags{url: db.URL, schema: testSchema, cli: &cli{connectTimeout: 5 * time.Second}}).open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	policy := RedrivePolicy{Reasons: []string{"unavailable"}, Rate: 2, Every: time.Second}
	if err := policy.validate(); err != nil {
		t.Fatal(err)
	}
	if err := (&RedrivePolicy{Reasons: []string{"payload_invalid"}}).validate(); err == nil {
		t.Fatal("a policy for a deterministic reason was accepted")
	}
	r := &redriver{policy: policy, pool: pool, cli: &cli{connectTimeout: time.Second, stderr: io.Discard, stdout: io.Discard,
		lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}}

	// Pub/Sub down (nothing listens at its address): nothing moves.
	up := env["PUBSUB_EMULATOR_HOST"]
	env["PUBSUB_EMULATOR_HOST"] = "127.0.0.1:1"
	if n, err := r.tick(t.Context()); err == nil || n != 0 {
		t.Fatalf("tick while Pub/Sub is down: moved %d, err %v; want 0 and the error", n, err)
	}
	env["PUBSUB_EMULATOR_HOST"] = up
	// Pub/Sub up but the topic missing: it does not take the events yet.
	if n, err := r.tick(t.Context()); err != nil || n != 0 {
		t.Fatalf("tick while the topic is missing: moved %d, err %v; want 0", n, err)
	}
	if _, err := ps.Client.TopicAdminClient.CreateTopic(t.Context(), &pb.Topic{Name: gpubsub.TopicName(gpubsubtest.Project, "items.events")}); err != nil {
		t.Fatal(err)
	}
	// Topic back: 2 rows/s for 1 s per tick -> 2, 2, 1.
	var moved []int
	start := time.Now()
	for i := 0; i < 3; i++ {
		n, err := r.tick(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		moved = append(moved, n)
	}
	if fmt.Sprint(moved) != "[2 2 1]" {
		t.Errorf("rows re-driven per tick: %v, want [2 2 1] (rate 2/s, every 1s)", moved)
	}
	if el := time.Since(start); el < 1500*time.Millisecond {
		t.Errorf("5 rows at 2 rows/s re-driven in %s: the rate is not applied", el)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'pending' AND replay_count = 1 AND id = ANY($1)`, transient); n != 5 {
		t.Errorf("transient rows pending again: %d, want 5", n)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed' AND id = ANY($1)`, deterministic); n != 2 {
		t.Errorf("deterministic rows still failed: %d, want 2", n)
	}
	if n := count(t, db, `SELECT coalesce(sum(row_count), 0)::int FROM outbox_replays WHERE requested_by = $1 AND filter->>'cause' = 'unavailable'`, RedriveBy); n != 5 {
		t.Errorf("rows audited as re-driven by the policy: %d, want 5", n)
	}
	// relayctl status shows the policy's work.
	st := relayctl(t, env, "status")
	if !strings.Contains(st.stdout, "AUTO RE-DRIVE (last 24h): 3 re-drive(s), 5 row(s) of unavailable") {
		t.Errorf("status does not show the re-drives:\n%s", st.stdout)
	}
}

// lockedBuffer is a bytes.Buffer safe for a command writing while the
// test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUICommand: relayctl ui refuses a re-drive of a deterministic
// reason, binds loopback by default, is read-only by default, and shows
// the readiness of the daemons it is given.
func TestUICommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	if r := relayctl(t, env, "ui", "--redrive", "payload_invalid"); r.code != ExitUsage || !strings.Contains(r.stderr, "deterministic") {
		t.Errorf("ui --redrive payload_invalid: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := relayctl(t, env, "ui", "--daemon", "publisher"); r.code != ExitUsage {
		t.Errorf("ui --daemon without a URL: exit %d", r.code)
	}
	if r := relayctl(t, env, "ui", "--addr", "0.0.0.0:0"); r.code != ExitUsage || !strings.Contains(r.stderr, "not a loopback address and no --identity-header") {
		t.Errorf("ui on a non-loopback address without an identity header: exit %d, stderr %q; want a refusal", r.code, r.stderr)
	}
	if r := relayctl(t, env, "ui", "--help"); !strings.Contains(r.stderr, `"127.0.0.1:8089"`) {
		t.Errorf("ui --help does not show the loopback default: %q", r.stderr)
	}

	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer ready.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		c := &cli{stdout: &out, stderr: &out, hooks: itemHooks(), lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
		done <- run(ctx, []string{"ui", "--addr", "127.0.0.1:0", "--daemon", "publisher-0=" + ready.URL + "/readyz"}, c)
	}()
	addr := ""
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("relayctl ui did not start: %s", out.String())
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "publisher-0") || !strings.Contains(string(body), "not ready") ||
		!strings.Contains(string(body), "every user who can reach this console acts as") {
		t.Errorf("overview: %d, lacks the daemon's readiness:\n%s", resp.StatusCode, body)
	}
	resp, err = http.PostForm("http://"+addr+"/failed/replay", url.Values{"reason": {"unavailable"}, "why": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST to relayctl ui without --write: %d, want 403", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("relayctl ui after cancel: exit %d\n%s", code, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("relayctl ui did not stop on cancel")
	}
}
