// Package data is the orders service's storage (Kratos layout): the
// Postgres OrderRepo. Each write changes the orders row and appends its
// event through eventrelay's outbox.Writer in the same pgx transaction, so
// the event exists if and only if the change commits.
package data
