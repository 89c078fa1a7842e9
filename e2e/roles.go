package e2e

import (
	"context"
	"fmt"
	"net/url"

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
	_, err = s.Relayctl(ctx, "grants", "--publisher", publisherRole,
		"--projector", projectorRole, "--projector-tables", "video_projection",
		"--writer", catalogRole, "--writer-tables", "videos,catalog_settings:SELECT,video_projection:SELECT",
		"--apply", "-by", "e2e-harness", "-why", "the daemons' roles")
	if err != nil || !s.Cfg.LogMode {
		return err
	}
	return s.grantLogMode(ctx, conn)
}

// grantLogMode gives the publisher's role what the log mode needs beyond
// `relayctl grants` (its lists do not name these yet): REPLICATION to
// stream and create the slot, and its row in outbox_log_slots. The
// publication is created here, by the owner, as an operator would: CREATE
// PUBLICATION needs the table's owner, which the publisher is not.
func (s *Stack) grantLogMode(ctx context.Context, conn *pgx.Conn) error {
	role := pgx.Identifier{publisherRole}.Sanitize()
	for _, sql := range []string{
		"ALTER ROLE " + role + " REPLICATION",
		"GRANT SELECT, INSERT, UPDATE ON " + pgx.Identifier{s.Cfg.Schema, "outbox_log_slots"}.Sanitize() + " TO " + role,
		"CREATE PUBLICATION " + pgx.Identifier{LogPublication}.Sanitize() + " FOR TABLE " +
			pgx.Identifier{s.Cfg.Schema, "outbox_events"}.Sanitize() + " WITH (publish = 'insert')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("log mode: %s: %w", sql, err)
		}
	}
	return nil
}

// roleURL is the run's database URL with role as its user.
func (s *Stack) roleURL(role string) string {
	u, err := url.Parse(s.DatabaseURL)
	if err != nil {
		return s.DatabaseURL // FreshDatabase built it; it parses
	}
	u.User = url.User(role)
	return u.String()
}
