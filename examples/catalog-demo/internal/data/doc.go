// Package data is the catalog's storage layer (Kratos layout): it
// implements biz.VideoRepo on Postgres with the sqlc queries of
// catalogdb and appends every change's event through the
// outbox writer in the same pgx transaction.
//
// It is the edge where driver errors stop: pgx.ErrNoRows and tombstoned
// rows become biz.ErrVideoNotFound, everything else is classified with
// projection.PostgresError (reasons projection.Classify reads) and wrapped once.
package data
