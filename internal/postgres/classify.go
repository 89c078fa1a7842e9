package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Classify translates a Postgres/pgx error into an errclass error, keeping
// the original in the chain. Already-classified errors, pgx.ErrNoRows and nil
// pass through unchanged.
//
//   - connection failures, admin shutdown, too many connections: unavailable
//   - query canceled, lock or statement timeout, context deadline: timeout
//   - serialization failure, deadlock: server_error (retry the transaction)
//   - data exceptions (22xxx), integrity violations (23xxx): payload_invalid
//   - undefined table or column (42P01, 42703), invalid schema name (3F000):
//     schema_missing (transient: the database is not migrated or
//     DATABASE_SCHEMA is wrong, never the event's fault)
//   - other syntax errors and access rule violations (42xxx): mapping_error
//   - insufficient privilege: permission_denied
//   - invalid password (28P01), invalid authorization specification
//     (28000: no such role, no pg_hba entry): authentication_failed
//     (transient: the credentials are wrong, never the event)
func Classify(err error) error {
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	var ce *errclass.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errclass.New(errclass.Timeout, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return errclass.New(reasonForCode(pgErr.Code), err)
	}
	// Everything else that reaches us from pgx without a SQLSTATE is a
	// transport problem: dial failures, resets, closed pools.
	return errclass.New(errclass.Unavailable, err)
}

func reasonForCode(code string) errclass.Reason {
	switch {
	case code == "42501":
		return errclass.PermissionDenied
	case code == "28P01" || code == "28000":
		return errclass.AuthenticationFailed
	case code == "42P01" || code == "42703" || code == "3F000":
		return errclass.SchemaMissing
	case code == "57014" || code == "55P03" || code == "25P03":
		return errclass.Timeout
	case code == "40001" || code == "40P01":
		return errclass.ServerError
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "57"), strings.HasPrefix(code, "53"):
		return errclass.Unavailable
	case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "23"):
		return errclass.PayloadInvalid
	case strings.HasPrefix(code, "42"):
		return errclass.MappingError
	default:
		return errclass.ServerError
	}
}
