// Package biz is the catalog's business layer (Kratos layout): the rules
// of a video's life cycle, independent of transport and storage.
//
// VideoUsecase validates input (errors are Kratos BadRequest errors with
// reason ERROR_REASON_INVALID_ARGUMENT whose message starts with the field
// name), decides the new state of a video and which fields changed, and
// enforces optimistic concurrency (expected_version). It hands the state
// to a VideoRepo, which stores it and appends exactly one outbox event in
// the same transaction.
//
// The entity is the contract's catalogv1.Video: catalog events are
// state-carrying, so the state a write stores is exactly the state its
// event carries, and one type for both keeps them from drifting.
//
// The layer never sees driver errors: a VideoRepo returns ErrVideoNotFound
// (or an error Is it) for unknown and deleted videos, passes through the
// errors of a Mutation, and classifies everything else (projection.Classify
// reads the reason).
package biz
