package projection

import "github.com/eventrelay/eventrelay/internal/postgres"

// PostgresError classifies a Postgres (pgx) error the way eventrelay's own
// Postgres code does, keeping err in the chain, so Classify (and a
// service's API edge) reads its reason: connection failures unavailable,
// timeouts and cancellation timeout, serialization failures and deadlocks
// server_error, data and integrity violations payload_invalid, a missing
// table, column or schema schema_missing, a missing privilege
// permission_denied, refused credentials authentication_failed. nil,
// pgx.ErrNoRows and an already classified error pass through unchanged.
// A handler's own queries need not call it (the projector classifies
// them); code that queries outside a handler (a relayctl hook, a
// repository) does.
func PostgresError(err error) error { return postgres.Classify(err) }
