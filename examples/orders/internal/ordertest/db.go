package ordertest

import (
	"testing"

	"github.com/eventrelay/eventrelay/relaytest"

	"github.com/eventrelay/eventrelay/examples/orders/migrations"
)

// Schema is the orders service's schema: its tables and eventrelay's.
const Schema = "orders"

// NewDB returns a fresh database for t with eventrelay's and the orders
// service's migration sets applied to Schema; its Pool's search_path is
// Schema.
func NewDB(t testing.TB) *relaytest.DB {
	t.Helper()
	return relaytest.NewDB(t, relaytest.Options{Schema: Schema, Migrations: migrations.Sets})
}
