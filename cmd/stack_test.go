package cmd_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

const deployGKEDoc = "docs/deploy-gke.md"

// grantBlocks are the two SQL blocks of docs/deploy-gke.md section 5: the
// first run as the database owner before migrating, the second as the
// migration user after. The test runs exactly what the document says.
func grantBlocks(t *testing.T) (before, after string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), deployGKEDoc))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## 5. Database roles and grants")
	j := strings.Index(doc, "## 6.")
	if i < 0 || j < i {
		t.Fatalf("%s: section 5 not found", deployGKEDoc)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(doc[i:j], -1)
	if len(blocks) != 2 {
		t.Fatalf("%s section 5: %d sql blocks, want 2 (before and after the first migration)", deployGKEDoc, len(blocks))
	}
	return blocks[0][1], blocks[1][1]
}

// TestGrantsRunTheDaemons creates the roles and grants of
// docs/deploy-gke.md section 5 on a fresh database (the IAM users as
// password roles, renamed per run), migrates as the non-superuser
// migration role with relayctl, and runs the real catalog, publisher and
// projector binaries each as its own non-owner, non-superuser role against
// an in-process Pub/Sub (pstest): a video written over HTTP must reach the
// projector's read model, every daemon must pass /readyz, the publisher
// must read its stats and report no store error, the projector must apply.
// After the migration no connection uses a superuser: the checks read
// through the operator role.
func TestGrantsRunTheDaemons(t *testing.T) {
	bin := buildDaemons(t) // before the budget: only the run is bounded
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st := newStack(ctx, t, bin)
	catHTTP, pubPort, projPort := st.catHTTP, st.pubPort, st.projPort
	st.startCatalog()
	st.startPublisher()
	st.startProjector()
	for name, port := range map[string]int{"catalog": catHTTP, "publisher": pubPort, "projector": projPort} {
		waitReady(ctx, t, name, port)
	}
	role, opURL := st.role, st.opURL

	// Write -> publish -> project.
	id := postVideo(t, catHTTP)
	oc := connect(ctx, t, opURL)
	defer oc.Close(ctx)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var projected int
		var status string
		if err := oc.QueryRow(ctx, "SELECT count(*) FROM catalog.video_projection WHERE video_id = $1", id).Scan(&projected); err != nil {
			t.Fatalf("reading the read model as the operator: %v", err)
		}
		if err := oc.QueryRow(ctx, "SELECT status FROM catalog.outbox_events ORDER BY id DESC LIMIT 1").Scan(&status); err != nil {
			t.Fatalf("reading the outbox as the operator: %v", err)
		}
		if projected == 1 && status == "published" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("video %s: projected %d, outbox row %s after 60s (daemon logs above)", id, projected, status)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The publisher read its stats and no outbox operation failed; the
	// projector applied and nothing failed.
	waitFor(ctx, t, "publisher stats read as its role", func() bool {
		return metric(t, pubPort, "outbox_stats_refreshed_timestamp_seconds") > 0
	})
	if n := metric(t, pubPort, "outbox_store_errors_total"); n != 0 {
		t.Errorf("outbox_store_errors_total = %v as the publisher role, want 0", n)
	}
	if n := metric(t, projPort, `projector_applied_total{projection="videos"}`); n < 1 {
		t.Errorf("projector_applied_total{videos} = %v, want >= 1", n)
	}
	if n := metric(t, projPort, "projector_failed_total"); n != 0 {
		t.Errorf("projector_failed_total = %v as the projector role, want 0", n)
	}

	// The daemons' roles are neither superusers nor owners.
	var supers, owned int
	names := []string{role("publisher"), role("projector"), role("catalog")}
	if err := oc.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = ANY($1) AND (rolsuper OR rolcreaterole OR rolcreatedb)", names).Scan(&supers); err != nil {
		t.Fatal(err)
	}
	if err := oc.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'catalog' AND tableowner = ANY($1)", names).Scan(&owned); err != nil {
		t.Fatal(err)
	}
	if supers != 0 || owned != 0 {
		t.Errorf("daemon roles: %d privileged, %d tables owned; want 0 and 0", supers, owned)
	}

	// Every session on the database after the migration is a daemon's or
	// the operator's, none a superuser's or the owner's: each daemon is
	// connected as its own role.
	rows, err := oc.Query(ctx, `SELECT a.usename, r.rolsuper, count(*) FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
		WHERE a.datname = current_database() GROUP BY a.usename, r.rolsuper`)
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]bool{}
	for rows.Next() {
		var user string
		var super bool
		var n int
		if err := rows.Scan(&user, &super, &n); err != nil {
			t.Fatal(err)
		}
		sessions[user] = true
		if super || !slices.Contains(names, user) && user != oc.Config().User {
			t.Errorf("%d session(s) as %s (superuser %v) after the migration; want only the daemons' roles and the operator", n, user, super)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !sessions[n] {
			t.Errorf("no session as %s: the daemon does not connect as its own role", n)
		}
	}
}

// stack is a fresh database with the documented roles and grants, the
// daemons of bin, Pub/Sub in process with configs/pubsub.yaml's resources;
// each daemon starts as its own role.
type stack struct {
	ctx                                 context.Context
	t                                   *testing.T
	bin                                 string
	role                                func(daemon string) string
	urlOf                               func(user string) string
	opURL                               string
	psEnv                               []string
	catHTTP, catGRPC, pubPort, projPort int
}

func newStack(ctx context.Context, t *testing.T, bin string) *stack {
	t.Helper()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = os.Getenv("DATABASE_URL")
	}
	if admin == "" {
		t.Fatal("needs a Postgres: DATABASE_URL (make test starts the private one with scripts/pg.sh)")
	}

	suffix := randomHex(t)
	dbName := "grants_" + suffix
	project := "grants-" + suffix // stands in for my-gcp-project in the role names
	role := func(daemon string) string { return "eventrelay-" + daemon + "@" + project + ".iam" }
	operator := "eventrelay_operator_" + suffix
	rewrite := strings.NewReplacer("my-gcp-project", project, "eventrelay_operator", operator,
		"DATABASE eventrelay ", "DATABASE "+dbName+" ")
	before, after := grantBlocks(t)

	// Setup as the server's superuser: the database, the IAM users (here
	// password roles), the owner's block of the document.
	adminConn := connect(ctx, t, admin)
	exec1(ctx, t, adminConn, "CREATE DATABASE "+dbName)
	daemons := []string{"migrate", "publisher", "projector", "catalog"}
	t.Cleanup(func() {
		c := connect(context.Background(), t, admin)
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
		for _, d := range daemons {
			_, _ = c.Exec(context.Background(), `DROP ROLE IF EXISTS "`+role(d)+`"`)
		}
		_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+operator)
		_, _ = c.Exec(context.Background(), `DROP ROLE IF EXISTS "operator-`+suffix+`"`)
	})
	for _, d := range daemons {
		exec1(ctx, t, adminConn, `CREATE ROLE "`+role(d)+`" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD 'pw'`)
	}
	adminConn.Close(ctx)
	dbAdmin := withUser(t, admin, "", "", dbName)
	c := connect(ctx, t, dbAdmin)
	exec1(ctx, t, c, rewrite.Replace(before))
	// A person holding the operator role (the document's commented GRANT).
	exec1(ctx, t, c, `CREATE ROLE "operator-`+suffix+`" LOGIN NOSUPERUSER PASSWORD 'pw'; GRANT `+operator+` TO "operator-`+suffix+`"`)
	c.Close(ctx)
	urlOf := func(user string) string { return withUser(t, admin, user, "pw", dbName) }

	// Migrate as the migration role (the Job's command), then its block.
	run(ctx, t, bin, "relayctl", []string{"DATABASE_URL=" + urlOf(role("migrate"))}, "migrate", "up", "-by", "test", "-why", "grants")
	mc := connect(ctx, t, urlOf(role("migrate")))
	exec1(ctx, t, mc, rewrite.Replace(after))
	mc.Close(ctx)

	// Pub/Sub: an in-process server, the resources of configs/pubsub.yaml
	// created by relayctl as the operator (it audits in the database).
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	psEnv := []string{"PUBSUB_EMULATOR_HOST=" + srv.Addr, "PUBSUB_PROJECT_ID=" + project}
	opURL := urlOf("operator-" + suffix)
	run(ctx, t, bin, "relayctl", append([]string{"DATABASE_URL=" + opURL}, psEnv...),
		"pubsub", "ensure", "-f", filepath.Join(repoRoot(t), "configs", "pubsub.yaml"), "-by", "test", "-why", "grants")

	return &stack{ctx: ctx, t: t, bin: bin, role: role, urlOf: urlOf, opURL: opURL, psEnv: psEnv,
		catHTTP: opstest.FreePort(t), catGRPC: opstest.FreePort(t), pubPort: opstest.FreePort(t), projPort: opstest.FreePort(t)}
}

// startCatalog, startPublisher and startProjector start a daemon as its
// role; the returned function stops it (SIGTERM, drain) and waits.
func (s *stack) startCatalog() func() {
	return start(s.ctx, s.t, s.bin, "catalog", []string{"DATABASE_URL=" + s.urlOf(s.role("catalog")),
		fmt.Sprintf("CATALOG_HTTP_ADDR=127.0.0.1:%d", s.catHTTP), fmt.Sprintf("CATALOG_GRPC_ADDR=127.0.0.1:%d", s.catGRPC)})
}

func (s *stack) startPublisher() func() {
	return start(s.ctx, s.t, s.bin, "publisher", append([]string{"DATABASE_URL=" + s.urlOf(s.role("publisher")),
		fmt.Sprintf("OUTBOX_HTTP_PORT=%d", s.pubPort), "OUTBOX_REINDEX_BLOAT_FACTOR=0", "OUTBOX_STATS_INTERVAL_SECONDS=1"}, s.psEnv...))
}

func (s *stack) startProjector() func() {
	return start(s.ctx, s.t, s.bin, "projector", append([]string{"DATABASE_URL=" + s.urlOf(s.role("projector")),
		fmt.Sprintf("PROJECTOR_HTTP_PORT=%d", s.projPort), "PROJECTOR_SEARCH_ENABLED=false"}, s.psEnv...))
}

// postVideo creates a video through the catalog's HTTP API and returns
// its id.
func postVideo(t *testing.T, port int) string {
	t.Helper()
	body := `{"uploader_id":"` + uuidV4(t) + `","title":"grants","duration_micros":"1000"}`
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/videos", port), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var created struct {
		Video struct {
			ID string `json:"id"`
		} `json:"video"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &created) != nil || created.Video.ID == "" {
		t.Fatalf("POST /v1/videos as the catalog role: %d %s", resp.StatusCode, b)
	}
	return created.Video.ID
}

// count runs a count(*) query.
func count(ctx context.Context, t *testing.T, c *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestRolloutSwitches exercises the switches of docs/rollout.md with the
// real daemons, each as its own role: with the consumers off, writes are
// published and the read model does not move; the consumers on, it
// converges; with the publisher off, writes still commit and wait in the
// outbox; the publisher on, the outbox drains and the read model converges.
func TestRolloutSwitches(t *testing.T) {
	bin := buildDaemons(t) // before the budget: only the run is bounded
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st := newStack(ctx, t, bin)
	st.startCatalog()
	stopPublisher := st.startPublisher()
	waitReady(ctx, t, "catalog", st.catHTTP)
	waitReady(ctx, t, "publisher", st.pubPort)
	oc := connect(ctx, t, st.opURL)
	defer oc.Close(ctx)
	const published = "SELECT count(*) FROM catalog.outbox_events WHERE status = 'published'"
	const waiting = "SELECT count(*) FROM catalog.outbox_events WHERE status <> 'published'"
	const projected = "SELECT count(*) FROM catalog.video_projection"

	// Phase 2 of a release: writers and publisher, consumers off.
	for range 10 {
		postVideo(t, st.catHTTP)
	}
	waitFor(ctx, t, "10 rows published with the consumers off", func() bool { return count(ctx, t, oc, published) == 10 })
	time.Sleep(time.Second)
	if n := count(ctx, t, oc, projected); n != 0 {
		t.Fatalf("read model has %d videos with the projector off, want 0", n)
	}

	// Consumers on: the backlog of the subscription converges.
	st.startProjector()
	waitReady(ctx, t, "projector", st.projPort)
	waitFor(ctx, t, "the read model converging on 10", func() bool { return count(ctx, t, oc, projected) == 10 })

	// Publisher off: writes still commit, rows wait in the outbox.
	stopPublisher()
	for range 10 {
		postVideo(t, st.catHTTP)
	}
	time.Sleep(2 * time.Second)
	if w, p := count(ctx, t, oc, waiting), count(ctx, t, oc, projected); w != 10 || p != 10 {
		t.Fatalf("publisher off: %d rows waiting, %d projected; want 10 and 10", w, p)
	}

	// Publisher on: the outbox drains, the read model converges.
	st.startPublisher()
	waitReady(ctx, t, "publisher", st.pubPort)
	waitFor(ctx, t, "the outbox drained and the read model at 20", func() bool {
		return count(ctx, t, oc, waiting) == 0 && count(ctx, t, oc, projected) == 20
	})
}

// repoRoot is the repository root (the tests of cmd run in cmd/).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func uuidV4(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func connect(ctx context.Context, t *testing.T, u string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connecting as %s: %v", redacted(u), err)
	}
	return c
}

func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "?"
	}
	return p.Redacted()
}

func exec1(ctx context.Context, t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("as %s: %v\n%s", c.Config().User, err, sql)
	}
}

// withUser is the admin URL with another user (empty: keep) and database.
func withUser(t *testing.T, admin, user, password, db string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	u := &url.URL{Scheme: "postgres", Host: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	switch {
	case user != "":
		u.User = url.UserPassword(user, password)
	case cfg.Password != "":
		u.User = url.UserPassword(cfg.User, cfg.Password)
	default:
		u.User = url.User(cfg.User)
	}
	if strings.HasPrefix(cfg.Host, "/") { // a socket directory
		u.Host = ""
		q := u.Query()
		q.Set("host", cfg.Host)
		q.Set("port", fmt.Sprint(cfg.Port))
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// buildDaemons builds the four binaries once per test process (shared with
// the other tests of cmd through opstest.Binary) and returns their
// directory: the publisher from this module, the catalog, its projector and
// its relayctl (the catalog's hooks) from the catalog demo's. Call it
// before a test's budget starts: a loaded machine takes minutes to build.
func buildDaemons(t *testing.T) string {
	t.Helper()
	dir := ""
	for _, name := range []string{"publisher", "catalog", "projector", "relayctl"} {
		d := filepath.Dir(opstest.Binary(t, binDir(name)))
		if dir != "" && d != dir {
			t.Fatalf("the builds of opstest.Binary are in %s and %s, want one directory", dir, d)
		}
		dir = d
	}
	return dir
}

// baseEnv is what every process gets besides its own variables: nothing
// of the test's environment that could point it elsewhere.
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DATABASE_SCHEMA=catalog"}
}

func run(ctx context.Context, t *testing.T, bin, name string, env []string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Env = append(baseEnv(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// start runs a daemon; the returned function stops it (SIGTERM, then
// waits for its drain; a kill after 20 s). It is stopped when the test
// ends at the latest, and its output logged if the test failed.
func start(ctx context.Context, t *testing.T, bin, name string, env []string) func() {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), "-conf", "")
	cmd.Env = append(baseEnv(), env...)
	var mu sync.Mutex
	var out bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			mu.Lock()
			out.WriteString(s.Text() + "\n")
			mu.Unlock()
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			pw.Close()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			mu.Lock()
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			mu.Unlock()
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			t.Logf("%s output (last %d lines):\n%s", name, len(lines), strings.Join(lines, "\n"))
		}
	})
	return stop
}

func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("waiting for %s: gave up after 60s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitReady(ctx context.Context, t *testing.T, name string, port int) {
	t.Helper()
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s /readyz as its own role: %s", name, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metric sums the samples of series (a name, optionally with labels as
// written in the exposition) on a daemon's /metrics.
func metric(t *testing.T, port int, series string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	sum := 0.0
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, l, _ := strings.Cut(strings.TrimSuffix(key, "}"), "{")
		if n != name || labels != "" && !strings.Contains(l, labels) {
			continue
		}
		var v float64
		fmt.Sscan(val, &v)
		sum += v
	}
	return sum
}
