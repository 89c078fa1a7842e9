// Package postgres opens Postgres pools for eventrelay's daemons and tools,
// applies migration sets (Migrate, over the public migrations package), and
// translates Postgres errors into errclass reasons at the edge.
//
// Every connection runs with search_path set to the configured schema (no
// default: the service names its own, or its URL's search_path does), so the
// sqlc queries, which use unqualified table names, work against any
// service's schema.
package postgres
