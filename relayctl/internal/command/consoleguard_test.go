package command

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

// doHost sends a request with the given Host (and Origin, when not
// empty) header, as a browser whose name resolves to the console would.
func (u *consoleUnderTest) doHost(method, path, host, origin string, form url.Values) (int, string) {
	u.t.Helper()
	body := strings.NewReader("")
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.srv.URL+path, body)
	if err != nil {
		u.t.Fatal(err)
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("X-Goog-Authenticated-User-Email", "accounts.google.com:"+u.who)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConsoleRefusesAForeignHost: a request whose Host is not one the
// console serves (a name an attacker's DNS points at it) is refused before
// any handler runs, and so is a POST from a foreign Origin even with a
// valid token; the console's own names are served.
func TestConsoleRefusesAForeignHost(t *testing.T) {
	t.Parallel()
	_, db, env := ensured(t)
	ids := failRows(t, db, "unavailable", 1)
	c := newConsole(t, env, true, pubsubConfig)
	own := strings.TrimPrefix(c.srv.URL, "http://")
	_, port, _ := strings.Cut(own, ":")
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "127.0.0.1.nip.io:" + port, "localhost.attacker.example:" + port} {
		code, body := c.doHost(http.MethodGet, "/failed", host, "", nil)
		if code != http.StatusMisdirectedRequest || !strings.Contains(body, "Host") {
			t.Errorf("GET /failed with Host %s: %d %q, want 421 naming the Host", host, code, body)
		}
		form := url.Values{"ids": {idList(ids)}, "why": {"rebinding"}, "csrf": {c.c.csrfToken(c.who)}}
		if code, _ := c.doHost(http.MethodPost, "/failed/replay", host, "http://"+host, form); code != http.StatusMisdirectedRequest {
			t.Errorf("POST /failed/replay with Host %s: %d, want 421", host, code)
		}
	}
	form := url.Values{"ids": {idList(ids)}, "why": {"cross-origin"}, "csrf": {c.c.csrfToken(c.who)}}
	if code, body := c.doHost(http.MethodPost, "/failed/replay", own, "http://attacker.example:"+port, form); code != http.StatusForbidden || !strings.Contains(body, "Origin") {
		t.Errorf("POST with a foreign Origin: %d %q, want 403 naming the Origin", code, body)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed'`); n != 1 {
		t.Errorf("failed rows after refused requests: %d, want 1", n)
	}
	for _, host := range []string{own, "localhost:" + port, "[::1]:" + port} {
		if code, body := c.doHost(http.MethodGet, "/failed", host, "", nil); code != http.StatusOK {
			t.Errorf("GET /failed with the console's own Host %s: %d %q", host, code, body)
		}
	}
	if code, body := c.doHost(http.MethodPost, "/failed/replay", own, c.srv.URL, form); code != http.StatusSeeOther {
		t.Errorf("same-origin POST: %d %q", code, body)
	}
}

// rpcCounter counts the Pub/Sub RPCs that change a subscription's state or
// its messages, as pstest receives them behind the strict double.
type rpcCounter struct {
	mu sync.Mutex
	n  map[string]int
}

var mutatingRPCs = []string{"Pull", "StreamingPull", "Acknowledge", "ModifyAckDeadline", "Seek", "Publish",
	"CreateSubscription", "UpdateSubscription", "DeleteSubscription", "CreateTopic", "UpdateTopic", "DeleteTopic",
	"CreateSnapshot", "UpdateSnapshot", "DeleteSnapshot", "DetachSubscription", "ModifyPushConfig"}

func (r *rpcCounter) options() []pstest.ServerReactorOption {
	var opts []pstest.ServerReactorOption
	for _, name := range mutatingRPCs {
		opts = append(opts, pstest.ServerReactorOption{FuncName: name, Reactor: rpcCount{r, name}})
	}
	return opts
}

func (r *rpcCounter) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n = map[string]int{}
}

func (r *rpcCounter) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

type rpcCount struct {
	r    *rpcCounter
	name string
}

func (c rpcCount) React(any) (bool, any, error) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	if c.r.n == nil {
		c.r.n = map[string]int{}
	}
	c.r.n[c.name]++
	return false, nil, nil
}

// tablesChecksum is a digest of every row of every table in the test's
// schema: equal before and after means nothing was written.
func tablesChecksum(t *testing.T, db *testDB) string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT quote_ident(table_name) FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1`, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var sum strings.Builder
	for _, tb := range tables {
		var s string
		if err := db.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT %s || ':' || count(*) || ':' || coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '')
			FROM %s.%s x`, "'"+tb+"'", testSchema, tb)).Scan(&s); err != nil {
			t.Fatalf("checksum of %s: %v", tb, err)
		}
		sum.WriteString(s + "\n")
	}
	return sum.String()
}

// consoleGETs are the requests the side-effect test sends to each GET
// route: every route, with the inputs that used to act (a live source
// subscription, a dead-letter one, filters, ids).
func consoleGETs(ids []int64) map[string][]string {
	id := fmt.Sprint(ids[0])
	return map[string][]string{
		"GET /{$}":            {"/"},
		"GET /failed":         {"/failed", "/failed?reason=unavailable", "/failed?ids=" + id},
		"GET /failed/row":     {"/failed/row?id=" + id},
		"GET /failed/replay":  {"/failed/replay?ids=" + id, "/failed/replay?reason=unavailable", "/failed/replay?reason=unavailable&pin=1&ids=" + id + "&why=x"},
		"GET /failed/resolve": {"/failed/resolve?ids=" + id, "/failed/resolve?ids=" + id + "&why=x"},
		"GET /dlq":            {"/dlq", "/dlq?subscription=items.events.dlq-view", "/dlq?subscription=items.view", "/dlq?subscription=items.audit"},
		"GET /replays":        {"/replays"},
		"GET /audit":          {"/audit"},
		"GET /static/":        {"/static/console.css", "/static/console.js"},
	}
}

// TestConsoleGETsChangeNothing walks every GET route the console
// registers, with the inputs that used to act, and checks that none
// reached a Pub/Sub pull, ack, nack, seek or publish (as pstest received
// them behind the strict double) or wrote a row in the database.
func TestConsoleGETsChangeNothing(t *testing.T) {
	t.Parallel()
	counter := &rpcCounter{}
	ps := gpubsubtest.New(t, counter.options()...)
	db, env := ensure(t, ps)
	ids := failRows(t, db, "unavailable", 2)
	publish(t, ps, "items.events.dlq-view", &pubsub.Message{Data: []byte("x"), Attributes: newPoison(t, "mapping_error", false).attrs})
	publish(t, ps, "items.events", &pubsub.Message{Data: []byte("live"), Attributes: map[string]string{"event_id": "live-1"}})
	c := newConsole(t, env, true, pubsubConfig)
	gets := consoleGETs(ids)
	var missing []string
	for _, p := range c.c.routePatterns() {
		if strings.HasPrefix(p, "GET ") {
			if _, ok := gets[p]; !ok {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("GET routes this test does not visit (add them to consoleGETs): %v", missing)
	}
	before := tablesChecksum(t, db)
	counter.reset()
	var paths []string
	for _, ps := range gets {
		paths = append(paths, ps...)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			if code, body := c.do(m, p, nil); code >= 500 {
				t.Errorf("%s %s: %d %s", m, p, code, body)
			}
		}
	}
	if got := counter.snapshot(); len(got) > 0 {
		t.Errorf("GETs reached Pub/Sub RPCs that change state: %v", got)
	}
	if after := tablesChecksum(t, db); after != before {
		t.Errorf("GETs changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
