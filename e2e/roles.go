package e2e

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// The daemons' database roles: each daemon connects as its own login role,
// neither owner nor superuser, granted by `relayctl grants --apply` exactly
// what its readiness checks (docs/deploy-gke.md section 5); relayctl and
// the harness stay the owner (the operator).
const (
	publisherRole = "eventrelay_publisher"
	projectorRole = "eventrelay_projector"
	catalogRole   = "eventrelay_catalog"
)

// grantRoles creates the daemons' roles (cluster-wide, kept across runs)
// and grants them on the run's fresh database.
func (s *Stack) grantRoles(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("connecting to create the daemons' roles: %w", err)
	}
	defer conn.Close(ctx)
	for _, r := range []string{publisherRole, projectorRole, catalogRole} {
		sql := fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
			pgx.Identifier{r}.Sanitize())
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("creating role %s: %w", r, err)
		}
	}
	// The reindex of bloated outbox indexes needs ownership, so the
	// publisher's role does not reindex (OUTBOX_REINDEX_BLOAT_FACTOR=0, as
	// the gke overlay sets it).
	args := []string{"grants", "--publisher", publisherRole,
		"--projector", projectorRole, "--projector-tables", "video_projection",
		"--writer", catalogRole, "--writer-tables", "videos,catalog_settings:SELECT,video_projection:SELECT"}
	if s.Cfg.LogMode {
		// REPLICATION, outbox_log_slots and the publication, created by
		// the owner as an operator would (CREATE PUBLICATION needs it).
		args = append(args, "--publisher-mode", "log", "--publication", LogPublication)
	}
	_, err = s.Relayctl(ctx, append(args, "--apply", "-by", "e2e-harness", "-why", "the daemons' roles")...)
	return err
}

// roleURL is the run's database URL with role as its user and app as its
// application_name, by which checkRoles finds the daemon's sessions.
func (s *Stack) roleURL(role, app string) string {
	u, err := url.Parse(s.DatabaseURL)
	if err != nil {
		return s.DatabaseURL // FreshDatabase built it; it parses
	}
	u.User = url.User(role)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// checkRoles fails unless every daemon of apps (their application_name)
// has a session on the run's database and each session's role is neither
// a superuser nor the owner of a table of the schema: the daemons run as
// their own roles, whatever their configuration says. It waits up to 30 s
// for the sessions (a ready daemon has connected).
func (s *Stack) checkRoles(ctx context.Context, apps []string) error {
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("connecting to check the daemons' roles: %w", err)
	}
	defer conn.Close(ctx)
	const q = `SELECT a.application_name, a.usename::text, r.rolsuper,
		EXISTS (SELECT 1 FROM pg_tables t WHERE t.schemaname = $2 AND t.tableowner = a.usename)
		FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
		WHERE a.datname = current_database() AND a.application_name = ANY($1)`
	var missing []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		rows, err := conn.Query(ctx, q, apps, s.Cfg.Schema)
		if err != nil {
			return fmt.Errorf("reading the daemons' sessions: %w", err)
		}
		seen := map[string]bool{}
		for rows.Next() {
			var app, user string
			var super, owns bool
			if err := rows.Scan(&app, &user, &super, &owns); err != nil {
				return err
			}
			if super || owns {
				return fmt.Errorf("daemon %s connects as %s (superuser %v, owns tables of %s %v): want its own role", app, user, super, s.Cfg.Schema, owns)
			}
			seen[app] = true
		}
		if err := rows.Err(); err != nil {
			return err
		}
		missing = missing[:0]
		for _, a := range apps {
			if !seen[a] {
				missing = append(missing, a)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no session of daemon(s) %v on the run's database after 30s", missing)
		}
	}
}
