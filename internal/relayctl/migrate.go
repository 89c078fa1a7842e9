package relayctl

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

const migrateUsage = `
migrate up|down|status [flags]

Applies the embedded migrations (migrations/*.sql) to --schema.

Guard (seed 003): when --expect-db or --expect-host is set (or the env
EVENTRELAY_MIGRATE_EXPECT_DB / EVENTRELAY_MIGRATE_EXPECT_HOST), the command
connects first and refuses (exit 2, nothing changed) unless the server's
current_database() equals --expect-db and the target host equals
--expect-host. The host matches the host of the connection string or the
server's own address (inet_server_addr); "host:port" also checks the port.
"down" always requires --expect-db.

  up      apply every pending migration
  down    roll back the newest migration (--to N: roll back to version N;
          --to 0 drops everything)
  status  list migrations and whether they are applied (--json)

Mutations are recorded in admin_audit (--by defaults to the OS user).`

func runMigrate(ctx context.Context, c *cli, args []string) error {
	subs := map[string]func(context.Context, *cli, []string) error{
		"up":     func(ctx context.Context, c *cli, a []string) error { return migrate(ctx, c, "up", a) },
		"down":   func(ctx context.Context, c *cli, a []string) error { return migrate(ctx, c, "down", a) },
		"status": func(ctx context.Context, c *cli, a []string) error { return migrate(ctx, c, "status", a) },
	}
	return group(ctx, c, "migrate up|down|status", migrateUsage, subs, args)
}

func migrate(ctx context.Context, c *cli, sub string, args []string) error {
	fs := newFlags(c, "migrate "+sub, migrateUsage)
	db := addDBFlags(c, fs)
	g := guard{}
	fs.StringVar(&g.host, "expect-host", c.env("EVENTRELAY_MIGRATE_EXPECT_HOST", ""), "refuse unless the target host is this (host or host:port; env EVENTRELAY_MIGRATE_EXPECT_HOST)")
	fs.StringVar(&g.db, "expect-db", c.env("EVENTRELAY_MIGRATE_EXPECT_DB", ""), "refuse unless current_database() is this (env EVENTRELAY_MIGRATE_EXPECT_DB)")
	to := fs.Int64("to", -1, "down: roll back to this version (0 = everything); default: the newest migration only")
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
	cfg, err := db.config()
	if err != nil {
		return err
	}
	// An unreachable server is reported here, within --connect-timeout.
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	pool.Close()
	if err := g.check(ctx, cfg); err != nil {
		return err
	}
	m, err := postgres.NewMigrator(ctx, cfg)
	if err != nil {
		return err
	}
	defer m.Close()

	switch sub {
	case "status":
		return migrateStatus(ctx, c, m, *asJSON)
	case "up":
		fmt.Fprintf(c.stdout, "migrating %s (schema %s) up\n", postgres.Redact(cfg.URL), cfg.Schema)
		res, err := m.Up(ctx)
		for _, r := range res {
			fmt.Fprintf(c.stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
		}
		if err != nil {
			return err
		}
		if len(res) == 0 {
			fmt.Fprintln(c.stdout, "no pending migrations")
		}
		return auditMigrate(ctx, cfg, audit, "migrate up", len(res))
	default: // down
		fmt.Fprintf(c.stdout, "migrating %s (schema %s) down", postgres.Redact(cfg.URL), cfg.Schema)
		if *to >= 0 {
			fmt.Fprintf(c.stdout, " to version %d\n", *to)
		} else {
			fmt.Fprintln(c.stdout, " by one migration")
		}
		// Audit first: rolling back the first migration drops admin_audit.
		if err := auditMigrate(ctx, cfg, audit, "migrate down", int(*to)); err != nil {
			return err
		}
		if *to >= 0 {
			res, err := m.DownTo(ctx, *to)
			for _, r := range res {
				fmt.Fprintf(c.stdout, "rolled back %s\n", r.Source.Path)
			}
			return err
		}
		r, err := m.Down(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "rolled back %s\n", r.Source.Path)
		return nil
	}
}

func migrateStatus(ctx context.Context, c *cli, m *postgres.Migrator, asJSON bool) error {
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Version   int64  `json:"version"`
		File      string `json:"file"`
		State     string `json:"state"`
		AppliedAt string `json:"applied_at,omitempty"`
	}
	rows := make([]row, 0, len(st))
	for _, s := range st {
		r := row{Version: s.Source.Version, File: s.Source.Path, State: string(s.State)}
		if !s.AppliedAt.IsZero() {
			r.AppliedAt = s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		rows = append(rows, r)
	}
	if asJSON {
		return json.NewEncoder(c.stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tFILE\tSTATE\tAPPLIED_AT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", r.Version, r.File, r.State, r.AppliedAt)
	}
	return tw.Flush()
}

func auditMigrate(ctx context.Context, cfg postgres.Config, a *auditFlags, command string, n int) error {
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
	_, err = writeAudit(ctx, conn, command, a.byOrUser(), a.why, map[string]any{"schema": cfg.Schema, "n": n})
	return err
}

// guard is seed 003's protection against migrating the wrong database.
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
