package command

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

//go:embed console
var consoleFS embed.FS

// ConsoleConfig configures the web console (relayctl ui, or mounted in a
// service's own HTTP server through package relayctl/ui).
type ConsoleConfig struct {
	// DatabaseURL and Schema select the service's database, as --database-url
	// and --schema do for the other commands.
	DatabaseURL, Schema string
	// PubSubFile is configs/pubsub.yaml: with it the console shows the
	// subscriptions and dead letters and offers dlq replay/purge and seek.
	PubSubFile string
	// Write allows mutations; without it every mutating request is refused.
	Write bool
	// IdentityHeader names a header set by a trusted proxy carrying the
	// operator's identity (X-Goog-Authenticated-User-Email behind
	// Identity-Aware Proxy). Empty: the local user runs everything.
	IdentityHeader string
	// MaxProcessing and OldestSLO are status's --max-processing (default
	// 5m) and --oldest-slo (default 1m; negative: off).
	MaxProcessing time.Duration
	OldestSLO     time.Duration
	// SampleEvery is how often the console samples lag and throughput for
	// its charts (default 5s); it keeps the last hour.
	SampleEvery time.Duration
	// Redrive is the automatic re-drive of transient failures; zero: off.
	Redrive RedrivePolicy
	// Hooks are the service's hooks (the Decoder decodes dead letters;
	// each of the Projections can be rebuilt).
	Hooks hook.Hooks
	// Lookup reads the environment (PUBSUB_EMULATOR_HOST, ...); nil: none.
	Lookup func(string) (string, bool)
	// ConnectTimeout bounds the first call to each store (default 5s).
	ConnectTimeout time.Duration
	// Log receives the re-drive policy's errors; nil: dropped.
	Log io.Writer
	// Daemons are readiness URLs the overview probes (name -> URL of a
	// daemon's /readyz, e.g. "publisher-0" -> http://10.0.0.7:8081/readyz).
	// Credentials in them are never shown.
	Daemons map[string]string
	// AllowedHosts are the Host header values the console answers, "host"
	// (any port) or "host:port"; any other is refused with 421 (a page of
	// another site whose name resolves to the console: DNS rebinding).
	// Empty: localhost, 127.0.0.1 and [::1] on any port. relayctl ui sets
	// the addresses it listens on (ListenHosts) and --allowed-hosts.
	AllowedHosts []string
}

// Console is the web console: an http.Handler.
type Console struct {
	cfg     ConsoleConfig
	pool    *pgxpool.Pool
	tmpl    *template.Template
	key     []byte
	hosts   hostAllowList
	mux     *http.ServeMux
	routes  []consoleRoute
	local   string
	samples *sampler
	redrive *redriver
	subs    subsCache
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// NewConsole opens the database and starts the sampler (and the re-drive
// policy when configured). Close stops them.
func NewConsole(ctx context.Context, cfg ConsoleConfig) (*Console, error) {
	if cfg.MaxProcessing <= 0 {
		cfg.MaxProcessing = 5 * time.Minute
	}
	if cfg.OldestSLO == 0 {
		cfg.OldestSLO = defaultOldestSLO
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = 5 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if cfg.Lookup == nil {
		cfg.Lookup = func(string) (string, bool) { return "", false }
	}
	if err := cfg.Redrive.validate(); err != nil {
		return nil, err
	}
	hosts, err := newHostAllowList(cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, key: make([]byte, 32), samples: &sampler{}, hosts: hosts}
	if _, err := rand.Read(c.key); err != nil {
		return nil, err
	}
	c.local = "unknown"
	if u, err := user.Current(); err == nil {
		c.local = u.Username
	}
	db := &dbFlags{url: cfg.DatabaseURL, schema: cfg.Schema, cli: c.cli(io.Discard)}
	pool, err := db.open(ctx)
	if err != nil {
		return nil, err
	}
	c.pool = pool
	tmpl, err := template.New("").Funcs(consoleFuncs).ParseFS(consoleFS, "console/*.html")
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.tmpl = tmpl
	c.register()
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stop = cancel
	c.done.Add(1)
	go func() { defer c.done.Done(); c.samples.run(rctx, c.pool, cfg.SampleEvery) }()
	if cfg.Redrive.enabled() {
		c.redrive = &redriver{policy: cfg.Redrive, pool: pool, cli: c.cli(io.Discard), pubsubFile: cfg.PubSubFile, log: cfg.Log}
		c.done.Add(1)
		go func() { defer c.done.Done(); c.redrive.run(rctx) }()
	}
	return c, nil
}

// Close stops the background loops and closes the database pool.
func (c *Console) Close() {
	c.stop()
	c.done.Wait()
	c.pool.Close()
}

// cli is the invocation the console runs the CLI's commands in: its
// environment is the console's, with the database it was given.
func (c *Console) cli(out io.Writer) *cli {
	return &cli{stdout: out, stderr: out, hooks: c.cfg.Hooks, connectTimeout: c.cfg.ConnectTimeout,
		lookup: func(k string) (string, bool) {
			switch k {
			case "DATABASE_URL":
				return c.cfg.DatabaseURL, c.cfg.DatabaseURL != ""
			case "DATABASE_SCHEMA":
				return c.cfg.Schema, c.cfg.Schema != ""
			case "EVENTRELAY_SCHEMA":
				return "", false
			}
			return c.cfg.Lookup(k)
		}}
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on the console's own form posts, and the Origin check
	// (checkHost) would refuse them; other sites still get no referrer.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !c.checkHost(w, r) {
		return
	}
	if _, err := c.identity(r); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !c.cfg.Write && !readOnlyPOSTs[r.URL.Path] {
			http.Error(w, "read-only console: start it with write access (relayctl ui --write) to change anything", http.StatusForbidden)
			return
		}
		if err := c.checkCSRF(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	c.mux.ServeHTTP(w, r)
}

// identity is who makes the request: the trusted header when configured
// (required then), else the local user.
func (c *Console) identity(r *http.Request) (string, error) {
	if c.cfg.IdentityHeader == "" {
		return c.local, nil
	}
	v := strings.TrimSpace(r.Header.Get(c.cfg.IdentityHeader))
	if v == "" {
		return "", fmt.Errorf("no %s header: the console expects to run behind the proxy that sets it", c.cfg.IdentityHeader)
	}
	// IAP prefixes the identity with its provider: accounts.google.com:alice@example.com.
	if i := strings.LastIndex(v, ":"); i >= 0 && strings.Contains(v[:i], ".") {
		v = v[i+1:]
	}
	return v, nil
}

// csrfToken is bound to the identity: a token seen by one operator is
// useless to another, and a page of another origin cannot read it.
func (c *Console) csrfToken(who string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(who))
	return hex.EncodeToString(m.Sum(nil))
}

func (c *Console) checkCSRF(r *http.Request) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return errors.New("cross-site request refused")
	}
	who, _ := c.identity(r)
	if err := r.ParseForm(); err != nil {
		return err
	}
	got := r.PostForm.Get("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.csrfToken(who))) != 1 {
		return errors.New("missing or wrong CSRF token: reload the page and try again")
	}
	return nil
}

// consoleRoute is one registered route.
type consoleRoute struct {
	pattern string
	handler http.HandlerFunc
}

// register builds the mux. A GET changes nothing (no pull, ack, nack,
// seek, publish or database write: a test walks them all); what must pull
// to show something (a dead-letter peek) is a CSRF-checked POST.
func (c *Console) register() {
	c.routes = []consoleRoute{
		{"GET /{$}", c.overview},
		{"GET /failed", c.failed},
		{"GET /failed/row", c.failedRow},
		{"GET /failed/replay", c.replayPreview},
		{"POST /failed/replay", c.replayDo},
		{"GET /failed/resolve", c.resolvePreview},
		{"POST /failed/resolve", c.resolveDo},
		{"GET /dlq", c.dlq},
		{"POST /dlq/peek", c.dlqPeek},
		{"POST /dlq/replay", c.dlqDo("replay")},
		{"POST /dlq/purge", c.dlqDo("purge")},
		{"GET /replays", c.replays},
		{"POST /seek", c.seekDo},
		{"POST /rebuild", c.rebuildDo},
		{"GET /audit", c.audit},
		{"GET /static/", func(w http.ResponseWriter, r *http.Request) {
			http.StripPrefix("/static/", http.FileServerFS(mustSub(consoleFS, "console/static"))).ServeHTTP(w, r)
		}},
	}
	c.mux = http.NewServeMux()
	for _, rt := range c.routes {
		c.mux.HandleFunc(rt.pattern, rt.handler)
	}
}

// routePatterns are the registered patterns ("GET /failed", ...).
func (c *Console) routePatterns() []string {
	out := make([]string, len(c.routes))
	for i, rt := range c.routes {
		out[i] = rt.pattern
	}
	return out
}

// MutatingRoutes are the console's POST endpoints that change something
// (tests refuse them all without write access).
var MutatingRoutes = []string{"/failed/replay", "/failed/resolve", "/dlq/replay", "/dlq/purge", "/seek", "/rebuild"}

// readOnlyPOSTs are POSTs a read-only console serves: they change nothing
// the operator cares about but must not be a GET (a dead-letter peek pulls
// and releases at once), so they carry the CSRF token.
var readOnlyPOSTs = map[string]bool{"/dlq/peek": true}

// page is what every template gets.
type page struct {
	Title, Active string
	Who, CSRF     string
	// Anonymous: no identity header, every user who reaches the console
	// acts as Who.
	Anonymous    bool
	Write        bool
	PubSub       bool
	Redrive      string
	Flash, Error string
	Refresh      bool
	Data         any
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, name, title string, data any, flash, errMsg string) {
	who, _ := c.identity(r)
	p := page{Title: title, Active: name, Who: who, CSRF: c.csrfToken(who), Anonymous: c.cfg.IdentityHeader == "", Write: c.cfg.Write, PubSub: c.cfg.PubSubFile != "",
		Redrive: c.cfg.Redrive.String(), Flash: flash, Error: c.redact(errMsg), Data: data, Refresh: name == "overview"}
	var buf bytes.Buffer
	if err := c.tmpl.ExecuteTemplate(&buf, name+".html", p); err != nil {
		http.Error(w, "rendering "+name+": "+c.redact(err.Error()), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if errMsg != "" {
		w.WriteHeader(http.StatusBadRequest)
	}
	// The last line of defence: the connection string's password never
	// leaves the console, whatever a message quoted.
	_, _ = w.Write([]byte(c.redact(buf.String())))
}

// redact removes the database password and the daemons' URL credentials
// from s (an error from a command may quote them, or a driver's lookup of
// a malformed password's tail).
func (c *Console) redact(s string) string {
	dsns := []string{c.cfg.DatabaseURL}
	for _, u := range c.cfg.Daemons {
		dsns = append(dsns, u)
	}
	s = postgres.NewScrubber(dsns...).Scrub(s)
	if c.cfg.DatabaseURL == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.DatabaseURL, postgres.Redact(c.cfg.DatabaseURL))
}

// subsEvery is how long the overview reuses the subscriptions' status
// (GetSubscription of each, at every 10-second refresh of every open page
// otherwise).
const subsEvery = time.Minute

type subsCache struct {
	mu       sync.Mutex
	at       time.Time
	subs     []subStatus
	problems []string
	err      error
}

// subscriptions is status's subscription report, at most subsEvery old.
func (c *Console) subscriptions(ctx context.Context) ([]subStatus, []string, error) {
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	if !c.subs.at.IsZero() && time.Since(c.subs.at) < subsEvery {
		return c.subs.subs, c.subs.problems, c.subs.err
	}
	rep := &statusReport{}
	client, cfg, res, err := (&pubsubFlags{file: c.cfg.PubSubFile}).connect(ctx, c.cli(io.Discard))
	if err == nil {
		// No peek: a GET pulls nothing (the Dead letters page peeks on request).
		err = subscriptionStatus(ctx, client, cfg, res, rep, false)
		client.Close()
	}
	for i := range rep.Subscriptions {
		if s := &rep.Subscriptions[i]; s.IsDLQ && s.Exists {
			s.Backlog = "peek on the Dead letters page (Cloud Monitoring has the backlog)"
		}
	}
	c.subs.at, c.subs.subs, c.subs.problems, c.subs.err = time.Now(), rep.Subscriptions, rep.Problems, err
	return rep.Subscriptions, rep.Problems, err
}

// overviewData is the Overview page.
type overviewData struct {
	Status    *statusReport
	Reasons   []reasonCount
	Replicas  []replica
	LagChart  template.HTML
	RateChart template.HTML
	Redriven  redriveSummary
	SubsError string
	Daemons   []daemonReadiness
}

// daemonReadiness is one daemon's /readyz answer.
type daemonReadiness struct {
	Name, URL, State string
	Ready            bool
}

// readiness probes every configured daemon, each within 2 seconds.
func (c *Console) readiness(ctx context.Context) []daemonReadiness {
	names := make([]string, 0, len(c.cfg.Daemons))
	for n := range c.cfg.Daemons {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]daemonReadiness, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		out[i] = daemonReadiness{Name: n, URL: postgres.Redact(c.cfg.Daemons[n])}
		wg.Add(1)
		go func(d *daemonReadiness) {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(pctx, http.MethodGet, c.cfg.Daemons[d.Name], nil)
			if err != nil {
				d.State = err.Error()
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				d.State = "unreachable: " + err.Error()
				return
			}
			resp.Body.Close()
			d.Ready = resp.StatusCode == http.StatusOK
			d.State = resp.Status
		}(&out[i])
	}
	wg.Wait()
	return out
}

type reasonCount struct {
	Reason    string
	N         int64
	Transient bool
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	rep := &statusReport{Problems: []string{}}
	if err := outboxStatus(r.Context(), c.pool, c.cfg.MaxProcessing, max(c.cfg.OldestSLO, 0), rep); err != nil {
		c.render(w, r, "overview", "Overview", nil, "", err.Error())
		return
	}
	d := overviewData{Status: rep}
	for k, n := range rep.Outbox.FailedByReason {
		d.Reasons = append(d.Reasons, reasonCount{k, n, errclass.Reason(k).Transient()})
	}
	sort.Slice(d.Reasons, func(i, j int) bool { return d.Reasons[i].N > d.Reasons[j].N })
	if parts, err := outboxdb.New(c.pool).ListOutboxPartitions(r.Context()); err == nil {
		d.Replicas = replicas(parts)
	}
	lag, rate := c.samples.series()
	d.LagChart, d.RateChart = sparkline(lag, "lag"), sparkline(rate, "rows/s")
	d.Redriven, _ = lastRedrives(r.Context(), c.pool)
	d.Daemons = c.readiness(r.Context())
	if c.cfg.PubSubFile != "" {
		subs, problems, err := c.subscriptions(r.Context())
		rep.Subscriptions, rep.Problems = subs, append(rep.Problems, problems...)
		if err != nil {
			d.SubsError = err.Error()
		}
	}
	c.render(w, r, "overview", "Overview", d, "", "")
}

// replica is one publisher replica and the partitions it leases; Owner
// "" gathers the partitions nobody leases.
type replica struct {
	Owner      string
	Partitions string
	N          int
	LeaseUntil time.Time
}

func replicas(parts []outboxdb.ListOutboxPartitionsRow) []replica {
	by := map[string]*replica{}
	var order []string
	for _, p := range parts {
		owner := p.Owner
		if !p.Leased {
			owner = ""
		}
		r, ok := by[owner]
		if !ok {
			r = &replica{Owner: owner}
			by[owner] = r
			order = append(order, owner)
		}
		if r.N > 0 {
			r.Partitions += ","
		}
		r.Partitions += strconv.Itoa(int(p.Partition))
		r.N++
		if p.Leased && p.LeaseUntil.Time.After(r.LeaseUntil) {
			r.LeaseUntil = p.LeaseUntil.Time
		}
	}
	sort.Strings(order)
	out := make([]replica, 0, len(order))
	for _, o := range order {
		out = append(out, *by[o])
	}
	return out
}

// failedQuery is the Failed rows filter as the page's query string.
type failedQuery struct {
	Reason, EventType, AggregateType, Aggregate, Topic, Since, Until, IDs string
	Limit                                                                 int
}

func readFailedQuery(r *http.Request) failedQuery {
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	f := failedQuery{Reason: q.Get("reason"), EventType: q.Get("event_type"), AggregateType: q.Get("aggregate_type"),
		Aggregate: q.Get("aggregate"), Topic: q.Get("topic"), Since: q.Get("since"), Until: q.Get("until"),
		IDs: strings.Join(q["ids"], ","), Limit: 200}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit = n
	}
	if f.IDs != "" && q.Get("pin") == "" {
		// A selection is exactly the chosen rows: what the preview shows
		// is what the confirmation acts on.
		return failedQuery{IDs: f.IDs, Limit: f.Limit}
	}
	// pin: the confirmation of a replay by filter carries the rows its
	// preview showed, so it moves exactly those (the filter and the ids
	// are both recorded, as relayctl replay --ids ... --reason ... would).
	return f
}

// filter is the CLI's row filter for the query; the same validation as
// replay's flags.
func (q failedQuery) filter(limit int) (*rowFilter, error) {
	if q.Reason != "" && !errclass.Reason(q.Reason).Valid() {
		return nil, fmt.Errorf("unknown reason %q", q.Reason)
	}
	f := &rowFilter{ids: q.IDs, Reason: q.Reason, Topic: q.Topic, AggregateType: q.AggregateType, AggregateID: q.Aggregate,
		Since: q.Since, Until: q.Until, Limit: limit}
	if err := f.resolve(time.Now()); err != nil {
		return nil, err
	}
	return f, nil
}

// keepEventType narrows rows to one event type (the outbox query has no
// such filter; the page applies it to what it lists).
func keepEventType(rows []outboxRow, t string) []outboxRow {
	if t == "" {
		return rows
	}
	out := rows[:0]
	for _, r := range rows {
		if r.EventType == t {
			out = append(out, r)
		}
	}
	return out
}

type failedData struct {
	Q       failedQuery
	Rows    []outboxRow
	Reasons []string
}

func (c *Console) failed(w http.ResponseWriter, r *http.Request) {
	q := readFailedQuery(r)
	d := failedData{Q: q}
	for _, x := range errclass.All {
		d.Reasons = append(d.Reasons, string(x))
	}
	f, err := q.filter(q.Limit)
	if err == nil {
		d.Rows, err = selectRows(r.Context(), outboxdb.New(c.pool), f, []string{"failed"}, q.Limit)
		d.Rows = keepEventType(d.Rows, q.EventType)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.render(w, r, "failed", "Failed rows", d, r.URL.Query().Get("flash"), msg)
}

func (c *Console) failedRow(w http.ResponseWriter, r *http.Request) {
	f := &rowFilter{ids: r.URL.Query().Get("id")}
	err := f.resolve(time.Now())
	var rows []outboxRow
	if err == nil && len(f.IDs) == 1 {
		rows, err = selectRows(r.Context(), outboxdb.New(c.pool), f, allStatuses, 1)
	}
	if err == nil && len(rows) == 0 {
		err = errors.New("no such outbox row")
	}
	if err != nil {
		c.render(w, r, "row", "Outbox row", nil, "", err.Error())
		return
	}
	type rowData struct {
		Row     outboxRow
		History string
		Payload string
	}
	d := rowData{Row: rows[0], History: prettyJSON(rows[0].ErrorHistory)}
	var payload []byte
	if err := c.pool.QueryRow(r.Context(), `SELECT payload FROM outbox_events WHERE id = $1`, rows[0].ID).Scan(&payload); err == nil {
		d.Payload = c.decodePayload(payload, rows[0])
	}
	c.render(w, r, "row", fmt.Sprintf("Outbox row %d", rows[0].ID), d, "", "")
}

// decodePayload shows a row's payload through the service's Decoder when
// it has one, else as text when it is printable, else base64.
func (c *Console) decodePayload(b []byte, row outboxRow) string {
	if d, _ := newBodyDecoder(c.cli(io.Discard), "", ""); d != nil {
		if j, err := d.json(b, map[string]string{"event_type": row.EventType}); err == nil {
			return prettyJSON(j)
		}
	}
	return printable(b)
}

// replayPreview is the dry run: exactly the rows a replay would move.
func (c *Console) replayPreview(w http.ResponseWriter, r *http.Request) {
	c.preview(w, r, "replay")
}

func (c *Console) resolvePreview(w http.ResponseWriter, r *http.Request) {
	c.preview(w, r, "resolve")
}

type previewData struct {
	Action string
	Q      failedQuery
	Filter string
	Rows   []outboxRow
	Behind int64
}

func (c *Console) preview(w http.ResponseWriter, r *http.Request, action string) {
	q := readFailedQuery(r)
	d := previewData{Action: action, Q: q}
	rows, f, err := c.selectForAction(r.Context(), q, action)
	if err == nil {
		d.Rows, d.Filter = rows, string(f.json())
		if action == "resolve" {
			ids := make([]int64, len(rows))
			for i, x := range rows {
				ids[i] = x.ID
			}
			d.Behind, err = outboxdb.New(c.pool).PendingBehind(r.Context(), ids)
		}
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.render(w, r, "preview", "Preview: "+action, d, "", msg)
}

// selectForAction applies the CLI's guards: replay needs a filter;
// resolve needs ids naming failed rows.
func (c *Console) selectForAction(ctx context.Context, q failedQuery, action string) ([]outboxRow, *rowFilter, error) {
	limit := 0
	if action == "replay" && q.IDs == "" {
		limit = q.Limit
	}
	f, err := q.filter(limit)
	if err != nil {
		return nil, nil, err
	}
	if action == "replay" && f.empty() {
		return nil, nil, errors.New("replay: choose rows or give a filter (reason, topic, aggregate, window): the console never replays everything")
	}
	if action == "resolve" && len(f.IDs) == 0 {
		return nil, nil, errors.New("resolve: choose the failed rows to close")
	}
	if q.EventType != "" && action == "replay" && len(f.IDs) == 0 {
		return nil, nil, errors.New("replay by event type: choose the rows (the outbox filter has no event type)")
	}
	rows, err := selectRows(ctx, outboxdb.New(c.pool), f, []string{"failed"}, f.Limit)
	return rows, f, err
}

func (c *Console) replayDo(w http.ResponseWriter, r *http.Request) {
	who, _ := c.identity(r)
	why := strings.TrimSpace(r.PostForm.Get("why"))
	q := readFailedQuery(r)
	if why == "" {
		c.render(w, r, "preview", "Preview: replay", previewData{Action: "replay", Q: q}, "", "a reason is required (ticket, incident): it is recorded with your name")
		return
	}
	_, f, err := c.selectForAction(r.Context(), q, "replay")
	if err != nil {
		c.render(w, r, "preview", "Preview: replay", previewData{Action: "replay", Q: q}, "", err.Error())
		return
	}
	// The same replayer, filter and audit row as relayctl replay.
	rp := &replayer{pool: c.pool, f: f, statuses: []string{"failed"}, by: who, why: why, batch: 500}
	moved, err := rp.run(r.Context(), func([]outboxRow) {})
	if err != nil {
		c.render(w, r, "preview", "Preview: replay", previewData{Action: "replay", Q: q}, "", err.Error())
		return
	}
	flash := fmt.Sprintf("replayed %d row(s); audit row outbox_replays.id=%d", len(moved), rp.auditID)
	if len(moved) == 0 {
		flash = "replayed 0 row(s): nothing matched, no audit row written"
	}
	http.Redirect(w, r, "/failed?flash="+urlEscape(flash), http.StatusSeeOther)
}

func (c *Console) resolveDo(w http.ResponseWriter, r *http.Request) {
	who, _ := c.identity(r)
	why := strings.TrimSpace(r.PostForm.Get("why"))
	q := readFailedQuery(r)
	if why == "" {
		c.render(w, r, "preview", "Preview: resolve", previewData{Action: "resolve", Q: q}, "", "a reason is required (ticket, incident): it is recorded with your name")
		return
	}
	rows, f, err := c.selectForAction(r.Context(), q, "resolve")
	if err == nil && len(rows) != len(f.IDs) {
		err = fmt.Errorf("resolve: nothing changed; %d of the %d chosen rows are not failed (any more)", len(f.IDs)-len(rows), len(f.IDs))
	}
	var auditID int64
	if err == nil {
		ids := make([]int64, len(rows))
		for i, x := range rows {
			ids[i] = x.ID
		}
		auditID, err = resolveRows(r.Context(), c.pool, ids, rows, &auditFlags{by: who, why: why})
	}
	if err != nil {
		c.render(w, r, "preview", "Preview: resolve", previewData{Action: "resolve", Q: q}, "", err.Error())
		return
	}
	http.Redirect(w, r, "/failed?flash="+urlEscape(fmt.Sprintf("resolved %d row(s); audit row admin_audit.id=%d", len(rows), auditID)), http.StatusSeeOther)
}

func (c *Console) runCLI(ctx context.Context, fn func(context.Context, *cli) error) (string, error) {
	var out bytes.Buffer
	err := fn(ctx, c.cli(&out))
	return c.redact(out.String()), err
}

// replaysData is the Replays page: the replays, the audited seeks,
// rebuilds and dead-letter actions, and the forms' choices.
type replaysData struct {
	Replays     []replayEntry
	Seeks       []auditEntry
	Subs        []string
	Projections []hook.Projection
}

func (c *Console) replaysData(ctx context.Context) (replaysData, error) {
	d := replaysData{Projections: c.cfg.Hooks.Projections}
	var err error
	d.Replays, err = listReplays(ctx, c.pool, 200)
	if err == nil {
		d.Seeks, err = listAudit(ctx, c.pool, []string{"seek", "rebuild", "dlq replay", "dlq purge", "snapshot create", "snapshot delete"}, 200)
	}
	if c.cfg.PubSubFile != "" {
		if _, res, lerr := (&pubsubFlags{file: c.cfg.PubSubFile}).load(c.cli(io.Discard)); lerr == nil && res != nil {
			for _, s := range res.Subscriptions {
				d.Subs = append(d.Subs, s.Name)
			}
		}
	}
	return d, err
}

type replayEntry struct {
	ID                    int64
	By, Why, Filter, From string
	Rows                  int32
	At                    time.Time
}

type auditEntry struct {
	ID               int64
	Command, By, Why string
	Details          string
	Outcome          string
	At               time.Time
}

func (c *Console) replays(w http.ResponseWriter, r *http.Request) {
	d, err := c.replaysData(r.Context())
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.render(w, r, "replays", "Replays and seek", d, r.URL.Query().Get("flash"), msg)
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request) {
	type auditData struct {
		Entries []auditEntry
		Replays []replayEntry
	}
	var d auditData
	var err error
	d.Entries, err = listAudit(r.Context(), c.pool, nil, 500)
	if err == nil {
		d.Replays, err = listReplays(r.Context(), c.pool, 500)
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.render(w, r, "audit", "Audit log", d, "", msg)
}

func listReplays(ctx context.Context, pool *pgxpool.Pool, limit int) ([]replayEntry, error) {
	rows, err := pool.Query(ctx, `SELECT id, requested_by, reason, filter::text, from_status, row_count, created_at
		FROM outbox_replays ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading outbox_replays: %w", postgres.Classify(err))
	}
	defer rows.Close()
	var out []replayEntry
	for rows.Next() {
		var e replayEntry
		if err := rows.Scan(&e.ID, &e.By, &e.Why, &e.Filter, &e.From, &e.Rows, &e.At); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func listAudit(ctx context.Context, pool *pgxpool.Pool, commands []string, limit int) ([]auditEntry, error) {
	rows, err := pool.Query(ctx, `SELECT id, command, requested_by, reason, details::text, coalesce(details->>'outcome', ''), created_at
		FROM admin_audit WHERE cardinality($1::text[]) = 0 OR command = ANY($1) ORDER BY id DESC LIMIT $2`, nonNil(commands), limit)
	if err != nil {
		return nil, fmt.Errorf("reading admin_audit: %w", postgres.Classify(err))
	}
	defer rows.Close()
	var out []auditEntry
	for rows.Next() {
		var e auditEntry
		if err := rows.Scan(&e.ID, &e.Command, &e.By, &e.Why, &e.Details, &e.Outcome, &e.At); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
