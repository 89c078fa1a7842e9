package consoletest

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relayctl/ui"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

const schema = "console"

// resources are the Pub/Sub resources of the tests: one events topic, one
// projection's subscription dead-lettering into its DLQ.
const resources = `
pubsub:
  project_id: eventrelay-local
topics:
  - name: items.events
  - name: items.events.dlq-view
subscriptions:
  - name: items.view
    topic: items.events
    ordered: true
    ack_deadline: 30s
    retention: 168h
    retain_acked: true
    dead_letter:
      topic: items.events.dlq-view
      max_delivery_attempts: 10
  - name: items.events.dlq-view
    topic: items.events.dlq-view
    ack_deadline: 60s
`

// chromium is the browser's path, or "" when none is installed.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// fixture is a console with write access on a private database and
// pstest, and a headless browser.
type fixture struct {
	t       *testing.T
	db      *relaytest.DB
	ps      *relaytest.PubSub
	console *httptest.Server
	browser context.Context
	shots   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	bin := chromium()
	if bin == "" {
		if os.Getenv("CONSOLE_TEST_REQUIRE_BROWSER") != "" {
			t.Fatal("no chromium found and CONSOLE_TEST_REQUIRE_BROWSER is set: install it (apt-get install -y chromium) or set CHROMIUM")
		}
		t.Skip("browser tests skipped: no chromium found (apt-get install -y chromium, or set CHROMIUM; make console-test installs it)")
	}
	f := &fixture{t: t, shots: t.ArtifactDir()}
	f.db = relaytest.NewDB(t, relaytest.Options{Schema: schema})
	f.ps = relaytest.NewPubSub(t, relaytest.PubSubOptions{})
	file := filepath.Join(t.TempDir(), "pubsub.yaml")
	if err := os.WriteFile(file, []byte(resources), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": f.db.URL, "DATABASE_SCHEMA": schema, "PUBSUB_EMULATOR_HOST": f.ps.Addr, "PUBSUB_PROJECT_ID": relaytest.ProjectID}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	if code := relayctl.Main(t.Context(), []string{"pubsub", "ensure", "-f", file}, &out, &out, relayctl.Hooks{Schema: schema}); code != relayctl.ExitOK {
		t.Fatalf("relayctl pubsub ensure: exit %d\n%s", code, out.String())
	}
	con, err := ui.New(t.Context(), ui.Options{DatabaseURL: f.db.URL, Schema: schema, PubSubFile: file, Write: true, SampleEvery: 100 * time.Millisecond,
		Hooks:  hook.Hooks{Projections: []hook.Projection{{Name: "item-view", Tables: []string{"item_view"}}}},
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatalf("ui.New: %v", err)
	}
	f.console = httptest.NewServer(con)
	t.Cleanup(func() { f.console.Close(); con.Close() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1400, 1000),
		// Other sites' names resolve to this machine, where the console
		// listens: how a DNS-rebinding attacker reaches it.
		chromedp.Flag("host-resolver-rules", "MAP "+rebindName+" 127.0.0.1, MAP "+attackerName+" 127.0.0.1"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	f.browser = bctx
	return f
}

// stepTimeout bounds one group of browser steps.
const stepTimeout = 30 * time.Second

// do runs browser steps, failing the test on error.
func (f *fixture) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.browser, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		lctx, lcancel := context.WithTimeout(f.browser, 5*time.Second)
		defer lcancel()
		where, _ := chromedp.Run(lctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		f.t.Fatalf("%s: %v\npage: %s", what, err, where)
	}
}

// get runs one browser action that returns a value.
func get[T any](f *fixture, what string, a chromedp.Action[T]) T {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.browser, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// text is the text of the element sel (a CSS selector).
func (f *fixture) text(sel string) string {
	f.t.Helper()
	return get(f, "reading "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// waitFor evaluates expr until it is true: across a navigation, which
// replaces the page's JavaScript context (an evaluation then fails and is
// tried again).
func (f *fixture) waitFor(expr string) {
	f.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		ctx, cancel := context.WithTimeout(f.browser, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("waiting for %s: %v", expr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot saves the page to the test's artifact directory (and to
// CONSOLE_SCREENSHOTS when set: make console-screenshots refreshes
// docs/console with it).
func (f *fixture) screenshot(name string) {
	f.t.Helper()
	png := get(f, "screenshot "+name, chromedp.FullScreenshot(100))
	for _, dir := range []string{f.shots, os.Getenv("CONSOLE_SCREENSHOTS")} {
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	f.t.Logf("screenshot %s.png in %s", name, f.shots)
}

// failRows writes n outbox rows failed with reason.
func (f *fixture) failRows(reason string, n int) []int64 {
	f.t.Helper()
	ids := f.insert(n)
	for _, id := range ids {
		f.exec(`UPDATE outbox_events SET status = 'failed', failed_at = now(), attempts = 5, error_reason = $2,
			last_error = $2 || ': the publish failed',
			error_history = jsonb_build_array(jsonb_build_object('at', now(), 'reason', $2, 'error', 'the publish failed', 'attempt', 5, 'worker', 'publisher-0'))
			WHERE id = $1`, id, reason)
	}
	return ids
}

// insert writes n pending outbox rows, one aggregate each.
func (f *fixture) insert(n int) []int64 {
	f.t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Encoder: testevent.Encode, DefaultTopic: "items.events"})
	if err != nil {
		f.t.Fatal(err)
	}
	evs := make([]outbox.Event, n)
	for i := range evs {
		agg := uuid.NewString()
		evs[i] = outbox.Event{AggregateType: testevent.AggregateType, AggregateID: agg, AggregateVersion: 1,
			EventType: testevent.TypeCreated, Payload: testevent.Payload(agg, 1, "item "+agg[:4], "")}
	}
	var ws []outbox.Written
	ctx := context.Background()
	err = pgx.BeginFunc(ctx, f.db.Pool, func(tx pgx.Tx) error {
		ws, err = w.InsertTx(ctx, tx, evs...)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []int64
	for _, x := range ws {
		ids = append(ids, x.ID)
	}
	return ids
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Pool.Exec(context.Background(), sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

func (f *fixture) query(sql string, dst ...any) {
	f.t.Helper()
	if err := f.db.Pool.QueryRow(context.Background(), sql).Scan(dst...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

// TestBrowserOverviewFilterPreviewReplay: the overview shows the failed
// rows; the failed list filters by reason; a replay of one chosen row is
// previewed (dry run), then performed with a reason; the row is pending
// again and the replay is in the audit log with who and why.
func TestBrowserOverviewFilterPreviewReplay(t *testing.T) {
	f := newFixture(t)
	transient := f.failRows("unavailable", 3)
	f.failRows("payload_invalid", 2)
	// A publisher at work while the console samples: the lag grows, then
	// drains, for the charts.
	pending := f.insert(60)
	for i := 0; i < 15; i++ {
		time.Sleep(120 * time.Millisecond)
		if i >= 5 {
			f.exec(`UPDATE outbox_events SET status = 'published', published_at = now(), message_id = 'm' || id WHERE id = ANY($1)`, pending[(i-5)*5:(i-4)*5])
		} else {
			pending = append(pending, f.insert(3)...)
		}
	}

	f.do("open the overview", chromedp.Navigate(f.console.URL+"/"), chromedp.WaitVisible(css("#failed-count")))
	if failed := f.text("#failed-count"); failed != "5" {
		t.Errorf("overview failed count %q, want 5", failed)
	}
	body := f.text("main")
	for _, want := range []string{"unavailable", "transient", "payload_invalid", "deterministic", "items.view", "Lag"} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	f.screenshot("overview")

	f.do("filter failed rows by reason",
		chromedp.Navigate(f.console.URL+"/failed"),
		chromedp.SetValue(css("#f-reason"), "unavailable"),
		chromedp.Click(css("#apply")))
	f.waitFor(`location.search.includes("reason=unavailable") && document.readyState === "complete"`)
	n := get(f, "counting rows", chromedp.Evaluate[int](`document.querySelectorAll("table.rows tbody tr[data-id]").length`))
	if n != 3 {
		t.Fatalf("failed rows with reason unavailable: %d shown, want 3", n)
	}
	f.screenshot("failed")

	row := transient[0]
	f.do("preview the replay of one row",
		chromedp.Click(css(fmt.Sprintf(`tr[data-id="%d"] input.pick`, row))),
		chromedp.Click(css("#preview-replay")),
		chromedp.WaitVisible(css("#confirm")))
	if dry := f.text("p.dry"); !strings.Contains(dry, "Dry run: 1 failed row(s) would move to pending") {
		t.Fatalf("preview says %q", dry)
	}
	var status string
	f.query(fmt.Sprintf(`SELECT status FROM outbox_events WHERE id = %d`, row), &status)
	if status != "failed" {
		t.Fatalf("after the preview the row is %s: a preview must change nothing", status)
	}
	f.do("type the reason", chromedp.SendKeys(css("#why"), "INC-7 Pub/Sub outage over"))
	f.screenshot("replay-preview")

	f.do("confirm the replay", chromedp.Click(css("#do")), chromedp.WaitVisible(css("#flash")))
	if flash := f.text("#flash"); !strings.Contains(flash, "replayed 1 row(s)") {
		t.Fatalf("after the replay: %q", flash)
	}
	var replays int
	f.query(fmt.Sprintf(`SELECT status, replay_count FROM outbox_events WHERE id = %d`, row), &status, &replays)
	if status != "pending" || replays != 1 {
		t.Errorf("replayed row: status %s, replay_count %d; want pending, 1", status, replays)
	}
	var by, why, filter string
	var rows int
	f.query(`SELECT requested_by, reason, filter::text, row_count FROM outbox_replays`, &by, &why, &filter, &rows)
	if why != "INC-7 Pub/Sub outage over" || rows != 1 || by == "" || !strings.Contains(filter, fmt.Sprintf(`"%d"`, row)) {
		t.Errorf("audit row: by %q why %q filter %s rows %d", by, why, filter, rows)
	}
	f.do("open the audit log", chromedp.Navigate(f.console.URL+"/audit"), chromedp.WaitVisible(css("#replays")))
	if audit := f.text("#replays"); !strings.Contains(audit, "INC-7 Pub/Sub outage over") || !strings.Contains(audit, by) {
		t.Errorf("audit log page lacks the replay: %q", audit)
	}
}

// TestBrowserDeadLetterReplay: a dead letter is listed decoded and
// republished to its main topic with a reason; it leaves the DLQ and the
// action is audited.
func TestBrowserDeadLetterReplay(t *testing.T) {
	f := newFixture(t)
	agg, eventID := uuid.NewString(), uuid.New()
	body, err := testevent.Encode(outbox.Metadata{EventID: eventID, EventType: testevent.TypeUpdated, AggregateType: testevent.AggregateType,
		AggregateID: agg, AggregateVersion: 2, SchemaVersion: 1, OccurredAt: time.Now()}, testevent.Payload(agg, 2, "poison", ""))
	if err != nil {
		t.Fatal(err)
	}
	p := f.ps.Client.Publisher("items.events.dlq-view")
	_, err = p.Publish(t.Context(), &pubsub.Message{Data: body, Attributes: map[string]string{
		"event_id": eventID.String(), "event_type": testevent.TypeUpdated, "aggregate_type": testevent.AggregateType, "aggregate_id": agg,
		"version": "2", "error_reason": "mapping_error", "error": "projection item_view: mapping_error", "projection": "item_view",
		"delivery_attempt": "3", "original_message_id": "orig-1"}}).Get(t.Context())
	p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	f.do("peek at the dead letters", chromedp.Navigate(f.console.URL+"/dlq?subscription=items.events.dlq-view"),
		chromedp.Click(css("#dlq-peek")), chromedp.WaitVisible(css("article.dl")))
	if listed := f.text("main"); !strings.Contains(listed, "mapping_error") || !strings.Contains(listed, "item_view") {
		t.Fatalf("dead letter page: %q", listed)
	}
	f.do("republish it",
		chromedp.Click(css("article.dl input.pick")),
		chromedp.SendKeys(css("#dlq-why"), "INC-8 mapping fixed"))
	f.screenshot("dead-letters")
	f.do("confirm", chromedp.Click(css("#dlq-replay")), chromedp.WaitVisible(css("#flash")))
	if flash := f.text("#flash"); !strings.Contains(flash, "replayed 1 message(s) to items.events") {
		t.Fatalf("after the dead-letter replay: %q", flash)
	}
	var command, why, details string
	f.query(`SELECT command, reason, details::text FROM admin_audit WHERE command LIKE 'dlq%'`, &command, &why, &details)
	if command != "dlq replay" || why != "INC-8 mapping fixed" || !strings.Contains(details, eventID.String()) {
		t.Errorf("audit: %s %q %s", command, why, details)
	}
	f.do("peek again", chromedp.Navigate(f.console.URL+"/dlq?subscription=items.events.dlq-view"),
		chromedp.Click(css("#dlq-peek")), chromedp.WaitVisible(css("p.none")))
	if after := f.text("main"); !strings.Contains(after, "no dead letters seen") {
		t.Errorf("the dead letter is still listed: %q", after)
	}
}

// TestBrowserRebuildProjection: the rebuild of one projection is
// previewed with the dry run's counts (nothing changes), then performed
// with a reason: its table and its inbox rows are emptied, the published
// outbox rows replayed, and the rebuild is audited and listed on the
// Replays page.
func TestBrowserRebuildProjection(t *testing.T) {
	f := newFixture(t)
	f.exec(`CREATE TABLE item_view (item_id text PRIMARY KEY, version bigint NOT NULL)`)
	ids := f.insert(4)
	f.exec(`UPDATE outbox_events SET status = 'published', published_at = now(), message_id = 'm' || id WHERE id = ANY($1)`, ids)
	f.exec(`INSERT INTO item_view SELECT aggregate_id, aggregate_version FROM outbox_events`)
	f.exec(`INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type)
		SELECT 'item-view', event_id, aggregate_type, aggregate_id, aggregate_version, event_type FROM outbox_events`)
	counts := func() (views, inbox, published int) {
		f.query(`SELECT (SELECT count(*) FROM item_view), (SELECT count(*) FROM inbox_events), (SELECT count(*) FROM outbox_events WHERE status = 'published')`,
			&views, &inbox, &published)
		return
	}

	f.do("preview the rebuild", chromedp.Navigate(f.console.URL+"/replays"), chromedp.WaitVisible(css("#rebuild")),
		chromedp.SendKeys(css(`#rebuild input[name="why"]`), "INC-9 item_view corrupted"),
		chromedp.Click(css("#preview-rebuild")), chromedp.WaitVisible(css("#confirm-rebuild")))
	preview := f.text("#preview")
	for _, want := range []string{"item_view (4 rows)", "delete 4 inbox row(s) of consumer item-view", "replay 4 published outbox row(s)", "dry run: nothing changed"} {
		if !strings.Contains(preview, want) {
			t.Fatalf("rebuild preview lacks %q:\n%s", want, preview)
		}
	}
	if v, i, p := counts(); v != 4 || i != 4 || p != 4 {
		t.Fatalf("after the preview: %d view rows, %d inbox rows, %d published; a preview must change nothing", v, i, p)
	}
	f.screenshot("rebuild-preview")

	f.do("confirm the rebuild", chromedp.Click(css("#do")), chromedp.WaitVisible(css("#flash")))
	if flash := f.text("#flash"); !strings.Contains(flash, "replayed 4 row(s)") {
		t.Fatalf("after the rebuild: %q", flash)
	}
	if v, i, p := counts(); v != 0 || i != 0 || p != 0 {
		t.Errorf("after the rebuild: %d view rows, %d inbox rows, %d published; want all emptied and replayed", v, i, p)
	}
	var by, why, details, outcome string
	f.query(`SELECT requested_by, reason, details::text, details->>'outcome' FROM admin_audit WHERE command = 'rebuild'`, &by, &why, &details, &outcome)
	if by == "" || why != "INC-9 item_view corrupted" || !strings.Contains(details, `"projection": "item-view"`) || outcome != "ok" {
		t.Errorf("audit row: by %q why %q outcome %q details %s", by, why, outcome, details)
	}
	if page := f.text("main"); !strings.Contains(page, "INC-9 item_view corrupted") {
		t.Errorf("the Replays page lacks the rebuild: %q", page)
	}
}
