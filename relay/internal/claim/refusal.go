package claim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// insufficientPrivilege is Postgres' SQLSTATE for a missing privilege.
const insufficientPrivilege = "42501"

// Refusal describes a missing-privilege error (SQLSTATE 42501) of one of
// the store's statements for readiness and logs: the object Postgres
// names and, for a table, which of SELECT, INSERT, UPDATE and DELETE the
// connected role lacks on it (e.g. "permission denied for table
// outbox_events: role publisher lacks UPDATE"). Any other error is
// described by its text.
func (s *Store) Refusal(ctx context.Context, err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != insufficientPrivilege {
		return err.Error()
	}
	_, object, ok := strings.Cut(pe.Message, "permission denied for ")
	kind, table, _ := strings.Cut(object, " ")
	if !ok || kind != "table" {
		return pe.Message
	}
	var role string
	var missing []string
	if err := s.pool.QueryRow(ctx, `SELECT current_user::text,
		coalesce(array_agg(p ORDER BY o) FILTER (WHERE NOT has_table_privilege(current_user, $1, p)), '{}')
		FROM unnest('{SELECT,INSERT,UPDATE,DELETE}'::text[]) WITH ORDINALITY AS x(p, o)`, table).Scan(&role, &missing); err != nil {
		return fmt.Sprintf("%s (the role's privileges could not be read: %v)", pe.Message, err)
	}
	if len(missing) == 0 {
		return fmt.Sprintf("%s: role %s (a privilege of a column, or one revoked since)", pe.Message, role)
	}
	return fmt.Sprintf("%s: role %s lacks %s", pe.Message, role, strings.Join(missing, ", "))
}
