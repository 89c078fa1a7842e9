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

// roleURL is the run's database URL with role as its user.
func (s *Stack) roleURL(role string) string {
	u, err := url.Parse(s.DatabaseURL)
	if err != nil {
		return s.DatabaseURL // FreshDatabase built it; it parses
	}
	u.User = url.User(role)
	return u.String()
}
