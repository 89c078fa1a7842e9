package projection_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventrelay/eventrelay/projection"
)

func TestPostgresErrorCarriesItsReasonToClassify(t *testing.T) {
	for _, c := range []struct {
		code      string
		reason    projection.Reason
		permanent bool
	}{
		{"42501", projection.PermissionDenied, false},
		{"23505", projection.PayloadInvalid, true},
		{"57P01", projection.Unavailable, false},
	} {
		err := fmt.Errorf("reading: %w", projection.PostgresError(&pgconn.PgError{Code: c.code}))
		if r, p := projection.Classify(err); r != c.reason || p != c.permanent {
			t.Errorf("SQLSTATE %s: Classify = %s, permanent %v; want %s, %v", c.code, r, p, c.reason, c.permanent)
		}
	}
	if err := projection.PostgresError(pgx.ErrNoRows); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("pgx.ErrNoRows became %v", err)
	}
	if projection.PostgresError(nil) != nil {
		t.Error("nil became an error")
	}
}
