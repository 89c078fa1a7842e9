package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest"
)

// StackConfig describes one run of the whole system.
type StackConfig struct {
	// Repo is the repository root (scripts/, configs/).
	Repo string
	// BinDir holds the built binaries (catalog, publisher, projector,
	// relayctl, es-testserver, relaydemo).
	BinDir string
	// RunDir receives the logs (one file per process) and the private
	// Pub/Sub data.
	RunDir string
	// PGDir and PGPort select the private Postgres instance (scripts/pg.sh
	// EVENTRELAY_PG_DIR/EVENTRELAY_PG_PORT). A run that restarts Postgres
	// must not use the instance other tests share. The port is written
	// into the data directory when it is created, so it must stay the same
	// for a given directory.
	PGDir  string
	PGPort int
	// Database is created afresh (default "eventrelay").
	Database string
	// Schema of the eventrelay tables (default "catalog").
	Schema string
	// Project is the Pub/Sub project id (default "eventrelay-local").
	Project string
	// Emulator selects the real Pub/Sub emulator; false runs the pstest
	// fallback (see EmulatorAvailable).
	Emulator bool
	// Publishers is the number of publisher replicas (default 2).
	Publishers int
	// PublisherEnv and ProjectorEnv are extra environment entries.
	PublisherEnv, ProjectorEnv []string
	// LogMode runs the publishers in the log mode (outbox.mode: log,
	// reading LogSlot): their role gets REPLICATION and the publication
	// is created by the operator (see grantRoles), and Stats judges
	// "settled" by the consumers alone, since rows stay pending.
	LogMode bool
	// Consumers are the projector's inbox consumers the harness waits for
	// (default: ConsumerPG and ConsumerES). The fault suite always checks
	// both, so leaving one out only helps when debugging the harness.
	Consumers []string
	// Out receives harness events (default stderr).
	Out io.Writer
}

func (c *StackConfig) defaults() error {
	if c.Repo == "" || c.BinDir == "" || c.RunDir == "" || c.PGDir == "" || c.PGPort == 0 {
		return fmt.Errorf("stack config: Repo, BinDir, RunDir, PGDir and PGPort are required")
	}
	if c.Database == "" {
		c.Database = "eventrelay"
	}
	if c.Schema == "" {
		c.Schema = "catalog"
	}
	if c.Project == "" {
		c.Project = "eventrelay-local"
	}
	if c.Publishers == 0 {
		c.Publishers = 2
	}
	if c.Out == nil {
		c.Out = os.Stderr
	}
	if len(c.Consumers) == 0 {
		c.Consumers = []string{ConsumerPG, ConsumerES}
	}
	return nil
}

// Names of the reference domain's Pub/Sub resources (configs/pubsub.yaml).
const (
	Topic             = "catalog.video.events"
	AuditSubscription = "catalog.video.audit"
	// Consumers are the projector's inbox consumer names
	// (configs/projector.yaml).
	ConsumerPG = "video-projection"
	ConsumerES = "video-search"
	// LogSlot and LogPublication are the log mode's replication slot and
	// publication (StackConfig.LogMode).
	LogSlot        = "eventrelay_e2e"
	LogPublication = "eventrelay_e2e"
)

// Stack is the running system.
type Stack struct {
	Cfg    StackConfig
	Sup    *Supervisor
	PG     *Postgres
	PubSub *PubSub
	// DatabaseURL of the run's database (no search_path; see Cfg.Schema).
	DatabaseURL string

	ES         *Proc
	ESURL      string
	ESControl  string // control address that stays up during an outage
	Catalog    *Proc
	CatalogURL string
	Publishers []*Proc
	Projector  *Proc

	Scraper *Scraper
	Stats   *Stats
}

// bin is the path of a built binary.
func (s *Stack) bin(name string) string { return filepath.Join(s.Cfg.BinDir, name) }

// BuildBinaries builds into binDir the publisher (repo/cmd/publisher), the
// catalog demo's daemons and relayctl (repo/examples/catalog-demo/cmd/...:
// the catalog, its projector, relayctl with the catalog's hooks) and the
// e2e commands (repo/e2e/cmd/...: relaydemo, es-testserver).
func BuildBinaries(ctx context.Context, repo, binDir string) error {
	for _, b := range []struct{ dir, pkgs string }{
		{repo, "./cmd/publisher"},
		{filepath.Join(repo, DemoModule), "./cmd/..."},
		{filepath.Join(repo, "e2e"), "./cmd/..."},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", binDir+"/", b.pkgs)
		cmd.Dir = b.dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build %s in %s: %w\n%s", b.pkgs, b.dir, err, out)
		}
	}
	return nil
}

// DemoModule is the catalog demo's module directory under the repository.
const DemoModule = "examples/catalog-demo"

// StartStack brings the system up in dependency order: Postgres (fresh
// database, migrations), Pub/Sub (fresh emulator, pubsub ensure), the
// Elasticsearch test server, the catalog, the publishers and the
// projector, each ready (/readyz) before the next. On error everything
// started so far is stopped.
func StartStack(ctx context.Context, cfg StackConfig) (_ *Stack, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	sup, err := NewSupervisor(cfg.RunDir, cfg.Out)
	if err != nil {
		return nil, err
	}
	s := &Stack{Cfg: cfg, Sup: sup, Scraper: NewScraper()}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := s.snapshotConfigs(); err != nil {
		return nil, err
	}
	for _, b := range []string{"catalog", "publisher", "projector", "relayctl", "es-testserver", "relaydemo"} {
		if _, err := os.Stat(s.bin(b)); err != nil {
			return nil, fmt.Errorf("binary %s missing in %s (BuildBinaries first): %w", b, cfg.BinDir, err)
		}
	}

	s.PG = &Postgres{Repo: cfg.Repo, Dir: cfg.PGDir, Port: cfg.PGPort}
	sup.OnStop("postgres", func() error { return s.PG.Stop(context.Background()) })
	if err := s.PG.Start(ctx); err != nil {
		return nil, err
	}
	sup.Logf("postgres     pid %-7d data %s (port %d)", s.PG.PID(), cfg.PGDir, cfg.PGPort)
	if s.DatabaseURL, err = s.PG.FreshDatabase(ctx, cfg.Database); err != nil {
		return nil, err
	}
	if _, err := s.Relayctl(ctx, "migrate", "up", "-by", "e2e-harness", "-why", "fresh run database"); err != nil {
		return nil, err
	}
	if err := s.grantRoles(ctx); err != nil {
		return nil, err
	}

	psPort, err := relaytest.FreePort()
	if err != nil {
		return nil, err
	}
	serverPort, err := relaytest.FreePort()
	if err != nil {
		return nil, err
	}
	s.PubSub = &PubSub{Repo: cfg.Repo, Dir: filepath.Join(cfg.RunDir, "pubsub"), Port: psPort, ServerPort: serverPort, Project: cfg.Project, Emulator: cfg.Emulator}
	if err := s.PubSub.StartFresh(ctx, sup, s.bin("relaydemo")); err != nil {
		return nil, err
	}
	sup.Logf("pubsub       pids %v at 127.0.0.1:%d: %s (log %s), behind the strict double at %s (round trip %v)",
		s.PubSub.PIDs(), s.PubSub.ServerPort, s.PubSub.Kind(), s.PubSub.LogPath(), s.PubSub.Host(), s.PubSub.Double.RTT())
	if err := s.EnsurePubSub(ctx); err != nil {
		return nil, err
	}

	if err := s.startES(ctx); err != nil {
		return nil, err
	}
	if err := s.startCatalog(ctx); err != nil {
		return nil, err
	}
	for i := 1; i <= cfg.Publishers; i++ {
		if err := s.startPublisher(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := s.startProjector(ctx); err != nil {
		return nil, err
	}
	apps := []string{"catalog", "projector"}
	for _, p := range s.Publishers {
		apps = append(apps, p.Name())
	}
	if err := s.checkRoles(ctx, apps); err != nil {
		return nil, err
	}
	if s.Stats, err = OpenStats(ctx, s.DatabaseURL, cfg.Schema); err != nil {
		return nil, err
	}
	s.Stats.LogMode = cfg.LogMode
	return s, nil
}

// EnsurePubSub applies configs/pubsub.yaml and creates the suite's own
// ordered audit tap, AuditSubscription (after every Pub/Sub start, before
// anything is published).
func (s *Stack) EnsurePubSub(ctx context.Context) error {
	if _, err := s.Relayctl(ctx, "pubsub", "ensure", "-f", s.conf("pubsub.yaml"),
		"-by", "e2e-harness", "-why", "fresh Pub/Sub server"); err != nil {
		return err
	}
	client, err := embedded.NewPubSubClient(ctx, s.PubSubConfig())
	if err != nil {
		return err
	}
	defer client.Close()
	return ensureOrderedSubscription(ctx, client, s.Cfg.Project, Topic, AuditSubscription)
}

// Relayctl runs relayctl with the run's environment and returns stdout; any
// non-zero exit is an error. The command and both streams are appended to
// relayctl.log.
func (s *Stack) Relayctl(ctx context.Context, args ...string) (string, error) {
	out, code, err := s.RelayctlCode(ctx, args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("relayctl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out, err
}

// RelayctlCode runs relayctl and returns stdout and the exit code (relayctl
// exits 1 for "found something": drift, matching dead letters). err is set
// only when it could not run or exited 2 (usage) or 3 (runtime failure).
func (s *Stack) RelayctlCode(ctx context.Context, args ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin("relayctl"), args...)
	cmd.Env = append(os.Environ(), s.baseEnv()...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	if f, err := os.OpenFile(filepath.Join(s.Cfg.RunDir, "relayctl.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "=== %s relayctl %s (%s)\n%s%s", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "), exitText(runErr), out.String(), errb.String())
		f.Close()
	}
	code := 0
	if runErr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) {
			return out.String(), -1, fmt.Errorf("relayctl %s: %w", strings.Join(args, " "), runErr)
		}
		code = ee.ExitCode()
	}
	if code >= 2 || code < 0 {
		return out.String(), code, fmt.Errorf("relayctl %s: %s\n%s%s", strings.Join(args, " "), exitText(runErr), out.String(), errb.String())
	}
	return out.String(), code, nil
}

// baseEnv points a process at the run's Postgres and Pub/Sub.
func (s *Stack) baseEnv() []string {
	env := []string{
		"DATABASE_URL=" + s.DatabaseURL,
		"DATABASE_SCHEMA=" + s.Cfg.Schema,
	}
	if s.PubSub != nil {
		env = append(env, s.PubSub.Env()...)
	}
	if s.ESURL != "" {
		env = append(env, "ELASTIC_URL="+s.ESURL)
	}
	return env
}

// conf is the run's copy of configs/<name> (see snapshotConfigs).
func (s *Stack) conf(name string) string { return filepath.Join(s.Cfg.RunDir, "configs", name) }

// snapshotConfigs copies configs/*.yaml (the publisher's, the Pub/Sub
// resources) and the catalog demo's configs/*.yaml into the run directory:
// every (re)start of a daemon reads the same files, whatever happens to the
// working tree meanwhile, and the run's logs sit beside what produced them.
func (s *Stack) snapshotConfigs() error {
	var files []string
	for _, dir := range []string{s.Cfg.Repo, filepath.Join(s.Cfg.Repo, DemoModule)} {
		found, err := filepath.Glob(filepath.Join(dir, "configs", "*.yaml"))
		if err != nil || len(found) == 0 {
			return fmt.Errorf("no configs/*.yaml in %s (%v)", dir, err)
		}
		files = append(files, found...)
	}
	dir := filepath.Join(s.Cfg.RunDir, "configs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) startES(ctx context.Context) error {
	port, err := relaytest.FreePort()
	if err != nil {
		return err
	}
	cport, err := relaytest.FreePort()
	if err != nil {
		return err
	}
	s.ESURL = "http://127.0.0.1:" + strconv.Itoa(port)
	s.ESControl = "http://127.0.0.1:" + strconv.Itoa(cport)
	s.ES, err = s.Sup.Start(ProcSpec{
		Name:     "es-testserver",
		Path:     s.bin("es-testserver"),
		Args:     []string{"-addr", "127.0.0.1:" + strconv.Itoa(port), "-control-addr", "127.0.0.1:" + strconv.Itoa(cport)},
		ReadyURL: s.ESControl + "/_estest/stats",
	})
	if err != nil {
		return err
	}
	return s.ES.WaitReady(ctx, 30*time.Second)
}

func (s *Stack) startCatalog(ctx context.Context) error {
	hp, err := relaytest.FreePort()
	if err != nil {
		return err
	}
	gp, err := relaytest.FreePort()
	if err != nil {
		return err
	}
	s.CatalogURL = "http://127.0.0.1:" + strconv.Itoa(hp)
	s.Catalog, err = s.Sup.Start(ProcSpec{
		Name: "catalog",
		Path: s.bin("catalog"),
		Args: []string{"-conf", s.conf("catalog.yaml")},
		// Reads answer from the read models (read_path defaults): the
		// suite's read-your-writes check reads them with tokens, and it
		// picks live videos for the poison only once the pipeline settled.
		Env: append(s.baseEnv(),
			"DATABASE_URL="+s.roleURL(catalogRole, "catalog"),
			"CATALOG_HTTP_ADDR=127.0.0.1:"+strconv.Itoa(hp),
			"CATALOG_GRPC_ADDR=127.0.0.1:"+strconv.Itoa(gp)),
		ReadyURL: s.CatalogURL + "/readyz",
	})
	if err != nil {
		return err
	}
	s.Scraper.Add(s.Catalog, s.CatalogURL+"/metrics")
	return s.Catalog.WaitReady(ctx, 60*time.Second)
}

func (s *Stack) startPublisher(ctx context.Context, i int) error {
	port, err := relaytest.FreePort()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("publisher-%d", i)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := s.Sup.Start(ProcSpec{
		Name: name,
		Path: s.bin("publisher"),
		Args: []string{"-conf", s.conf("publisher.yaml")},
		Env: append(append(s.baseEnv(),
			"DATABASE_URL="+s.roleURL(publisherRole, name),
			"OUTBOX_REINDEX_BLOAT_FACTOR=0",
			"OUTBOX_WORKER_ID="+name,
			"OUTBOX_HTTP_HOST=127.0.0.1",
			"OUTBOX_HTTP_PORT="+strconv.Itoa(port)),
			append(s.modeEnv(), s.Cfg.PublisherEnv...)...),
		ReadyURL:  base + "/readyz",
		StopGrace: 40 * time.Second, // outbox.grace_period (20s) plus exit
	})
	if err != nil {
		return err
	}
	s.Publishers = append(s.Publishers, p)
	s.Scraper.Add(p, base+"/metrics")
	return p.WaitReady(ctx, 60*time.Second)
}

// modeEnv selects the publishers' mode.
func (s *Stack) modeEnv() []string {
	if !s.Cfg.LogMode {
		return []string{"OUTBOX_MODE=poll"}
	}
	return []string{"OUTBOX_MODE=log", "OUTBOX_LOG_SLOT=" + LogSlot, "OUTBOX_LOG_PUBLICATION=" + LogPublication}
}

func (s *Stack) startProjector(ctx context.Context) error {
	port, err := relaytest.FreePort()
	if err != nil {
		return err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	s.Projector, err = s.Sup.Start(ProcSpec{
		Name: "projector",
		Path: s.bin("projector"),
		Args: []string{"-conf", s.conf("projector.yaml")},
		Env: append(append(s.baseEnv(),
			"DATABASE_URL="+s.roleURL(projectorRole, "projector"),
			"PROJECTOR_HTTP_PORT="+strconv.Itoa(port)),
			s.Cfg.ProjectorEnv...),
		ReadyURL:  base + "/readyz",
		StopGrace: 45 * time.Second, // shutdown_timeout (30s) plus exit
	})
	if err != nil {
		return err
	}
	s.Scraper.Add(s.Projector, base+"/metrics")
	return s.Projector.WaitReady(ctx, 60*time.Second)
}

// Stop stops every process and service of the run and reports pids still
// alive (expected: none).
func (s *Stack) Stop() []int {
	if s.Stats != nil {
		s.Stats.Close()
	}
	alive := s.Sup.StopAll()
	if s.PubSub != nil && s.PubSub.Emulator {
		alive = append(alive, s.PubSub.PIDs()...)
	}
	if s.PG != nil && s.PG.PID() != 0 && pidAlive(s.PG.PID()) {
		alive = append(alive, s.PG.PID())
	}
	return alive
}
