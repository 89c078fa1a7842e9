package hook

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/outbox"
)

// Rebuilder restates a service's source of truth through the outbox: one
// state-carrying event per aggregate at its current version, so every
// projection applies what it misses (version guards drop the rest).
// relayctl pages through the source, one transaction per page, and
// appends each page's events in that transaction with its outbox writer;
// it handles the plan, dry run, audit and progress.
type Rebuilder interface {
	// Subject describes what is restated.
	Subject() Subject
	// CheckID validates one --ids value before anything is read; its
	// error (any) is reported as bad input, prefixed with "--ids: ".
	CheckID(id string) error
	// Count counts the aggregates a rebuild restates: all of them, or
	// those whose id is in ids when ids is not empty.
	Count(ctx context.Context, tx pgx.Tx, ids []string) (Count, error)
	// Restate reads the next page, at most limit aggregates whose id
	// sorts after after ("" for the first page), restricted to ids when
	// not empty, in id order, locking the rows (FOR SHARE) in tx, and
	// returns exactly one restatement event per aggregate in that order,
	// with Restatement set. The last event's AggregateID is the next
	// page's after; fewer than limit events end the rebuild.
	Restate(ctx context.Context, tx pgx.Tx, after string, ids []string, limit int) ([]outbox.Event, error)
}

// Subject names what a Rebuilder restates and how its events are written.
type Subject struct {
	// Noun is one aggregate in the plan: "restate 10 order(s)".
	Noun string
	// Source is the source of truth in help texts, e.g. "orders".
	Source string
	// Tombstone is how a deleted aggregate is restated, in the plan:
	// "(1 deleted, as OrderDeleted)".
	Tombstone string
	// Topic is the default --topic: the topic every restatement is
	// written to. Empty: each restatement's own Topic, which
	// envelope's Codec.Event sets from its event type's Aggregate.
	Topic string
	// Encoder encodes the events (the service's outbox encoder).
	Encoder outbox.Encoder
}

// Count is how many aggregates a rebuild restates; Deleted of them are
// restated as tombstones.
type Count struct {
	Total   int64
	Deleted int64
}
