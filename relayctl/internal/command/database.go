package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os/user"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// dbFlags are the connection flags shared by every command that reads or
// writes Postgres.
type dbFlags struct {
	url    string
	schema string
	cli    *cli
}

func addDBFlags(c *cli, fs *flag.FlagSet) *dbFlags {
	d := &dbFlags{cli: c}
	d.url = c.env("DATABASE_URL", "")
	c.dsns = append(c.dsns, &d.url)
	fs.Var(&secretFlag{s: &d.url, redact: postgres.Redact}, "database-url", "Postgres connection string (env DATABASE_URL); shown with its password redacted")
	d.schema = c.env("DATABASE_SCHEMA", "")
	if old := c.env("EVENTRELAY_SCHEMA", ""); old != "" {
		// The daemons' name is DATABASE_SCHEMA; the old one still works.
		fmt.Fprintln(c.stderr, "relayctl: warning: EVENTRELAY_SCHEMA is deprecated, set DATABASE_SCHEMA (the daemons read that)")
		if d.schema == "" {
			d.schema = old
		}
	}
	if d.schema == "" {
		d.schema = c.hooks.Schema
	}
	fs.StringVar(&d.schema, "schema", d.schema, "schema holding the service's tables, eventrelay's included (env DATABASE_SCHEMA; EVENTRELAY_SCHEMA is a deprecated alias; empty: the URL's search_path)")
	return d
}

func (d *dbFlags) config() (postgres.Config, error) {
	cfg := postgres.Config{URL: d.url, Schema: d.schema, MaxConns: 4, ConnectTimeout: d.cli.connectTimeout}
	if err := cfg.Validate("database"); err != nil {
		if cfg.URL != "" && cfg.Schema == "" {
			if _, perr := pgx.ParseConfig(cfg.URL); perr == nil {
				return cfg, usageErr("no schema: set --schema or DATABASE_SCHEMA to the schema of the service's tables (or search_path in --database-url); " +
					"a service's relayctl sets its default in relayctl.Hooks.Schema")
			}
		}
		return cfg, &exitError{code: ExitUsage, err: fmt.Errorf("%w (set --database-url)", err)}
	}
	return cfg, nil
}

// open connects and pings within --connect-timeout, so an unreachable
// server is reported once, here, promptly.
func (d *dbFlags) open(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := d.config()
	if err != nil {
		return nil, err
	}
	pool, err := postgres.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, d.cli.connectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		role := pool.Config().ConnConfig.User
		pool.Close()
		err = postgres.Classify(err)
		if errclass.Of(err) == errclass.AuthenticationFailed {
			return nil, fmt.Errorf("Postgres refused the credentials: connecting to %s as %q: %w (check the user and password of --database-url or DATABASE_URL)",
				postgres.Redact(d.url), role, err)
		}
		return nil, fmt.Errorf("Postgres unreachable: connecting to %s (--connect-timeout %s): %w",
			postgres.Redact(d.url), d.cli.connectTimeout, err)
	}
	return pool, nil
}

// auditFlags are --by and --why of mutating commands.
type auditFlags struct {
	by  string
	why string
}

func addAuditFlags(fs *flag.FlagSet) *auditFlags {
	a := &auditFlags{}
	fs.StringVar(&a.by, "by", "", "who runs this (recorded in the audit table); required for a real run")
	fs.StringVar(&a.why, "why", "", "why (ticket, incident; recorded in the audit table); required for a real run")
	return a
}

// require refuses a mutating run without --by and --why (blank counts as
// missing).
func (a *auditFlags) require(cmd string) error {
	a.by, a.why = strings.TrimSpace(a.by), strings.TrimSpace(a.why)
	switch {
	case a.by == "" && a.why == "":
		return usageErr("%s changes state: --by and --why are required (who and why are recorded in the audit table); use --dry-run to preview", cmd)
	case a.by == "":
		return usageErr("%s changes state: --by is required (who runs this; recorded in the audit table)", cmd)
	case a.why == "":
		return usageErr("%s changes state: --why is required (ticket or incident; recorded in the audit table)", cmd)
	}
	return nil
}

// byOrUser is --by, or the OS user for commands where --by is optional.
func (a *auditFlags) byOrUser() string {
	if a.by != "" {
		return a.by
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// writeAudit records a mutating command in admin_audit, in tx when given.
func writeAudit(ctx context.Context, db outboxdb.DBTX, command, by, why string, details any) (int64, error) {
	b, err := json.Marshal(details)
	if err != nil {
		return 0, fmt.Errorf("encoding audit details: %w", err)
	}
	row, err := outboxdb.New(db).InsertAdminAudit(ctx, outboxdb.InsertAdminAuditParams{
		Command: command, RequestedBy: by, Reason: why, Details: b,
	})
	if err != nil {
		err = postgres.Classify(err)
		if errclass.Of(err) == errclass.SchemaMissing { // nothing done yet: the schema is not migrated
			return 0, usageErr("%s: eventrelay's tables are missing in this schema (admin_audit: %v): run `relayctl migrate up` "+
				"(a service's binary: `<service> relayctl migrate up`) against it first, then %s again", command, err, command)
		}
		return 0, fmt.Errorf("writing admin_audit row: %w", err)
	}
	return row.ID, nil
}

// auditRecord is an admin_audit row written before its command acts
// (details.outcome "started"), so an interrupted run is still on record,
// and completed with the outcome by finish.
type auditRecord struct {
	db outboxdb.DBTX
	id int64
}

func startAudit(ctx context.Context, db outboxdb.DBTX, command, by, why string, details map[string]any) (*auditRecord, error) {
	details["outcome"] = "started"
	id, err := writeAudit(ctx, db, command, by, why, details)
	if err != nil {
		return nil, err
	}
	return &auditRecord{db: db, id: id}, nil
}

// finish records "ok" or "failed: <err>" and returns err, joined with a
// failure to record it.
func (a *auditRecord) finish(ctx context.Context, err error) error {
	return a.finishWith(ctx, err, nil)
}

// finishWith is finish that also records result (e.g. counts) in the
// row's details.
func (a *auditRecord) finishWith(ctx context.Context, err error, result map[string]any) error {
	outcome := "ok"
	if err != nil {
		outcome = "failed: " + err.Error()
	}
	b, uerr := json.Marshal(result)
	if result == nil {
		b = []byte("{}")
	}
	if uerr == nil {
		uerr = outboxdb.New(a.db).SetAdminAuditResult(context.WithoutCancel(ctx), outboxdb.SetAdminAuditResultParams{ID: a.id, Outcome: outcome, Result: b})
	}
	if uerr != nil {
		uerr = fmt.Errorf("recording the outcome in admin_audit row %d: %w", a.id, postgres.Classify(uerr))
	}
	return errors.Join(err, uerr)
}

var _ outboxdb.DBTX = (pgx.Tx)(nil)
