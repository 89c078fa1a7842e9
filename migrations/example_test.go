package migrations_test

import (
	"context"
	"embed"
	"fmt"
	"log"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/migrations"
)

// A service embeds its own goose files next to its code, e.g.
//
//	//go:embed migrations/*.sql
//	var ordersFiles embed.FS
var ordersFiles embed.FS

// A service applies eventrelay's tables, then its own, to its schema at
// start (or from a migrate job).
func ExampleUp() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://orders@db/orders")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	orders := migrations.Set{Name: "orders", FS: ordersFiles, VersionTable: "orders_goose_db_version"}
	applied, err := migrations.Up(ctx, pool, "orders", migrations.Eventrelay, orders)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range applied {
		fmt.Println("applied", m.Set, m.File)
	}
}

// A service on another migration tool copies the statements into its own
// history (relayctl migrate sql prints the same).
func ExampleSQL() {
	text, err := migrations.SQL(migrations.Eventrelay)
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "-- ====") || strings.HasPrefix(line, "CREATE TABLE") {
			fmt.Println(line)
		}
	}
	// Output:
	// -- ==== 00001_eventrelay.sql (goose runs this file in one transaction)
	// CREATE TABLE outbox_events (
	// CREATE TABLE outbox_replays (
	// CREATE TABLE admin_audit (
	// CREATE TABLE inbox_events (
	// -- ==== 00002_outbox_resolved.sql (goose runs this file outside a transaction, statement by statement)
	// -- ==== 00003_outbox_pending_key_idx.sql (goose runs this file outside a transaction, statement by statement)
	// -- ==== 00004_outbox_partitions.sql (goose runs this file in one transaction)
	// CREATE TABLE outbox_partitions (
	// CREATE TABLE outbox_publishers (
	// -- ==== 00005_outbox_wakeups.sql (goose runs this file in one transaction)
	// CREATE TABLE outbox_wakeups (
	// -- ==== 00006_outbox_notify.sql (goose runs this file in one transaction)
	// -- ==== 00007_outbox_status_statistics.sql (goose runs this file in one transaction)
	// -- ==== 00008_outbox_fillfactor.sql (goose runs this file in one transaction)
	// -- ==== 00009_outbox_unannounced.sql (goose runs this file in one transaction)
	// -- ==== 00010_outbox_claims.sql (goose runs this file outside a transaction, statement by statement)
	// CREATE TABLE IF NOT EXISTS outbox_claims (
	// -- ==== 00011_outbox_fillfactor_three_versions.sql (goose runs this file in one transaction)
	// -- ==== 00012_outbox_log_slots.sql (goose runs this file in one transaction)
	// CREATE TABLE outbox_log_slots (
	// -- ==== 00013_inbox_aggregate_idx.sql (goose runs this file outside a transaction, statement by statement)
}

// A service declares its role's needs once, from what it runs of
// eventrelay (here the outbox writer) and its own tables; the same list
// prints its grants and is its readiness check (migrations.Check).
func ExampleGrantSQL() {
	needs := migrations.Merge(migrations.WriterNeeds, migrations.ReadWrite("orders"))
	fmt.Print(migrations.GrantSQL("orders", "orders-app", needs))
	// Output:
	// GRANT USAGE ON SCHEMA "orders" TO "orders-app";
	// GRANT SELECT ON "orders"."eventrelay_goose_db_version" TO "orders-app";
	// GRANT SELECT, INSERT ON "orders"."outbox_events" TO "orders-app";
	// GRANT SELECT ON "orders"."outbox_wakeups" TO "orders-app";
	// GRANT SELECT, INSERT, UPDATE, DELETE ON "orders"."orders" TO "orders-app";
}
