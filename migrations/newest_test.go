package migrations_test

import (
	"testing"

	"github.com/eventrelay/eventrelay/internal/migrate"
	"github.com/eventrelay/eventrelay/migrations"
)

// The schema checks require migrate.EventrelayNewest: it must name the
// newest file of eventrelay's set, or binaries would accept an outdated
// schema (or refuse a current one).
func TestEventrelayNewestIsTheNewestFile(t *testing.T) {
	got, err := migrate.Newest(migrations.Eventrelay)
	if err != nil {
		t.Fatal(err)
	}
	if got != migrate.EventrelayNewest {
		t.Fatalf("eventrelay's newest migration is %d, migrate.EventrelayNewest says %d: update it", got, migrate.EventrelayNewest)
	}
}
