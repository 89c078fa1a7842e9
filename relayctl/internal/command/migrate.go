package command

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/migrations"
)

const migrateUsage = `
migrate up|down|status|sql [flags]

Applies the migration sets this relayctl carries to --schema, in order:
eventrelay's own tables (set "eventrelay", version table
eventrelay_goose_db_version), then the service's own sets, each with its
own version table. --set NAME limits a command to one set. A schema migrated before the split (one goose_db_version) is adopted
by the first "up": that table becomes eventrelay_goose_db_version.

Guard: when --expect-db or --expect-host is set (or the env
EVENTRELAY_MIGRATE_EXPECT_DB / EVENTRELAY_MIGRATE_EXPECT_HOST), the command
connects first and refuses (exit 2, nothing changed) unless the server's
current_database() equals --expect-db and the target host equals
--expect-host. The host matches the host of the connection string or the
server's own address (inet_server_addr); "host:port" also checks the port.
"down" always requires --expect-db.

  up      apply every pending migration of each set
  down    roll back the newest migration (of --set, else of the last set
          with one applied); --to N rolls --set back to version N; --to 0
          without --set rolls every set back, the last set first
  status  list migrations per set and whether they are applied (--json)
  sql     print the up migrations as plain SQL for another migration tool
          (every set in order, or --set NAME); reads no database

Mutations are recorded in admin_audit (--by defaults to the OS user).`

// migrationSets are the sets relayctl migrate applies, in order: the
// service's hook (eventrelay's set, then the service's), else eventrelay's
// own set alone.
func (c *cli) migrationSets() []migrations.Set {
	if len(c.hooks.Migrations) == 0 {
		return []migrations.Set{migrations.Eventrelay}
	}
	return c.hooks.Migrations
}

func runMigrate(ctx context.Context, c *cli, args []string) error {
	subs := map[string]func(context.Context, *cli, []string) error{
		"up":     func(ctx context.Context, c *cli, a []string) error { return migrate(ctx, c, "up", a) },
		"down":   func(ctx context.Context, c *cli, a []string) error { return migrate(ctx, c, "down", a) },
		"status": func(ctx context.Context, c *cli, a []string) error { return migrate(ctx, c, "status", a) },
		"sql":    migrateSQL,
	}
	return group(ctx, c, "migrate up|down|status|sql", migrateUsage, subs, args)
}

// pickSets returns every set, or the one named (a usage error names the
// sets there are).
func pickSets(c *cli, name string) ([]migrations.Set, error) {
	all := c.migrationSets()
	if name == "" {
		return all, nil
	}
	var names []string
	for _, s := range all {
		if s.Name == name {
			return []migrations.Set{s}, nil
		}
		names = append(names, s.Name)
	}
	return nil, usageErr("--set %q: no such migration set (sets: %s)", name, strings.Join(names, ", "))
}

func migrateSQL(_ context.Context, c *cli, args []string) error {
	fs := newFlags(c, "migrate sql", migrateUsage)
	set := fs.String("set", "", "print only this set (default: every set, in the order they apply)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	sets, err := pickSets(c, *set)
	if err != nil {
		return err
	}
	for i, s := range sets {
		text, err := migrations.SQL(s)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(c.stdout)
		}
		fmt.Fprint(c.stdout, text)
	}
	return nil
}

func migrate(ctx context.Context, c *cli, sub string, args []string) error {
	fs := newFlags(c, "migrate "+sub, migrateUsage)
	db := addDBFlags(c, fs)
	g := guard{}
	fs.StringVar(&g.host, "expect-host", c.env("EVENTRELAY_MIGRATE_EXPECT_HOST", ""), "refuse unless the target host is this (host or host:port; env EVENTRELAY_MIGRATE_EXPECT_HOST)")
	fs.StringVar(&g.db, "expect-db", c.env("EVENTRELAY_MIGRATE_EXPECT_DB", ""), "refuse unless current_database() is this (env EVENTRELAY_MIGRATE_EXPECT_DB)")
	to := fs.Int64("to", -1, "down: roll back to this version of --set (0 = everything); default: the newest migration only")
	setName := fs.String("set", "", "work on this migration set only (default: every set)")
	asJSON := fs.Bool("json", false, "status: print JSON")
	audit := addAuditFlags(fs)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if sub == "down" && g.db == "" {
		return usageErr("migrate down: --expect-db (or EVENTRELAY_MIGRATE_EXPECT_DB) is required: name the database you mean to roll back")
	}
	if sub != "down" && *to != -1 {
		return usageErr("migrate %s: --to applies to down only", sub)
	}
	if sub == "down" && *to > 0 && *setName == "" {
		return usageErr("migrate down --to %d: versions are per set; name it with --set", *to)
	}
	sets, err := pickSets(c, *setName)
	if err != nil {
		return err
	}
	cfg, err := db.config()
	if err != nil {
		return err
	}
	// An unreachable server is reported here, within --connect-timeout.
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := g.check(ctx, cfg); err != nil {
		return err
	}

	switch sub {
	case "status":
		st, err := migrations.Status(ctx, pool, cfg.Schema, sets...)
		if err != nil {
			return err
		}
		return printMigrateStatus(c, st, *asJSON)
	case "up":
		fmt.Fprintf(c.stdout, "migrating %s (schema %s) up: sets %s\n", postgres.Redact(cfg.URL), cfg.Schema, setNames(sets))
		res, err := migrations.Up(ctx, pool, cfg.Schema, sets...)
		for _, r := range res {
			fmt.Fprintf(c.stdout, "applied %s/%s (%s)\n", r.Set, r.File, r.Duration.Round(1e6))
		}
		if err != nil {
			return err
		}
		if len(res) == 0 {
			fmt.Fprintln(c.stdout, "no pending migrations")
		}
		return auditMigrate(ctx, cfg, audit, "migrate up", map[string]any{"sets": setNames(sets), "n": len(res)})
	default:
		return migrateDown(ctx, c, pool, cfg, audit, sets, *to)
	}
}

// migrateDown rolls back one migration, one set to --to, or (--to 0
// without --set) every set, the last first.
func migrateDown(ctx context.Context, c *cli, pool *pgxpool.Pool, cfg postgres.Config, audit *auditFlags, sets []migrations.Set, to int64) error {
	st, err := migrations.Status(ctx, pool, cfg.Schema, sets...)
	if err != nil {
		return err
	}
	type step struct {
		set migrations.Set
		to  int64
	}
	var plan []step
	if to >= 0 { // one set (checked by the caller) or every set to 0
		for i := len(sets) - 1; i >= 0; i-- {
			plan = append(plan, step{sets[i], to})
		}
	} else {
		// The newest applied migration of the last set that has one; it
		// goes back to the applied version below it.
		for i := len(sets) - 1; i >= 0 && plan == nil; i-- {
			var applied []int64
			for _, m := range st {
				if m.Set == sets[i].Name && m.Applied {
					applied = append(applied, m.Version)
				}
			}
			if len(applied) > 0 {
				prev := int64(0)
				if len(applied) > 1 {
					prev = applied[len(applied)-2]
				}
				plan = append(plan, step{sets[i], prev})
			}
		}
		if plan == nil {
			return fmt.Errorf("migrate down: no migration of sets %s is applied in schema %s", setNames(sets), cfg.Schema)
		}
	}
	for _, s := range plan {
		fmt.Fprintf(c.stdout, "migrating %s (schema %s) down: set %s to version %d\n", postgres.Redact(cfg.URL), cfg.Schema, s.set.Name, s.to)
	}
	// Audit first: rolling back eventrelay's first migration drops admin_audit.
	if err := auditMigrate(ctx, cfg, audit, "migrate down", map[string]any{"sets": setNames(sets), "to": to}); err != nil {
		return err
	}
	for _, s := range plan {
		res, err := migrations.Down(ctx, pool, cfg.Schema, s.set, s.to)
		for _, r := range res {
			fmt.Fprintf(c.stdout, "rolled back %s/%s\n", r.Set, r.File)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func setNames(sets []migrations.Set) string {
	names := make([]string, len(sets))
	for i, s := range sets {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func printMigrateStatus(c *cli, st []migrations.Migration, asJSON bool) error {
	type row struct {
		Set       string `json:"set"`
		Version   int64  `json:"version"`
		File      string `json:"file"`
		State     string `json:"state"`
		AppliedAt string `json:"applied_at,omitempty"`
	}
	rows := make([]row, 0, len(st))
	for _, m := range st {
		r := row{Set: m.Set, Version: m.Version, File: m.File, State: "pending"}
		if m.Applied {
			r.State = "applied"
			r.AppliedAt = m.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		rows = append(rows, r)
	}
	if asJSON {
		return json.NewEncoder(c.stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SET\tVERSION\tFILE\tSTATE\tAPPLIED_AT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", r.Set, r.Version, r.File, r.State, r.AppliedAt)
	}
	return tw.Flush()
}

func auditMigrate(ctx context.Context, cfg postgres.Config, a *auditFlags, command string, details map[string]any) error {
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	present, err := outboxdb.New(conn).AdminAuditExists(ctx)
	if err != nil {
		return fmt.Errorf("looking for admin_audit: %w", postgres.Classify(err))
	}
	if !present {
		return nil
	}
	details["schema"] = cfg.Schema
	_, err = writeAudit(ctx, conn, command, a.byOrUser(), a.why, details)
	return err
}

// guard protects against migrating the wrong database.
type guard struct {
	host string
	db   string
}

func (g guard) check(ctx context.Context, cfg postgres.Config) error {
	if g.host == "" && g.db == "" {
		return nil
	}
	conn, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	id, err := outboxdb.New(conn).ServerIdentity(ctx)
	if err != nil {
		return fmt.Errorf("reading server identity: %w", postgres.Classify(err))
	}
	if g.db != "" && id.Database != g.db {
		return usageErr("guard: target database is %q, --expect-db is %q: refusing to migrate", id.Database, g.db)
	}
	if g.host == "" {
		return nil
	}
	wantHost, wantPort := g.host, ""
	if h, p, err := net.SplitHostPort(g.host); err == nil {
		wantHost, wantPort = h, p
	}
	cc := conn.Config()
	hostOK := strings.EqualFold(wantHost, cc.Host) || (id.ServerAddr != "" && wantHost == id.ServerAddr)
	if !hostOK {
		return usageErr("guard: target host is %q (server address %q), --expect-host is %q: refusing to migrate", cc.Host, id.ServerAddr, g.host)
	}
	if wantPort != "" {
		p, err := strconv.Atoi(wantPort)
		if err != nil {
			return usageErr("--expect-host %q: port is not a number", g.host)
		}
		if p != int(cc.Port) && p != int(id.ServerPort) {
			return usageErr("guard: target port is %d, --expect-host is %q: refusing to migrate", cc.Port, g.host)
		}
	}
	return nil
}

// connect opens one connection with the schema on the search_path.
func connect(ctx context.Context, cfg postgres.Config) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return nil, usageErr("database.url is not a valid connection string")
	}
	cc.RuntimeParams["search_path"] = cfg.Schema + ", public"
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", postgres.Redact(cfg.URL), postgres.Classify(err))
	}
	return conn, nil
}
