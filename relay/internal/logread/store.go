package logread

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// Store runs the log mode's statements on the outbox schema's pool
// (search_path = the schema). None writes to an outbox row except Fail,
// for an event's own fault.
type Store struct {
	pool   *pgxpool.Pool
	schema string
}

// NewStore returns a Store on pool for schema.
func NewStore(pool *pgxpool.Pool, schema string) *Store { return &Store{pool: pool, schema: schema} }

// CheckSchema checks what the log mode needs of the schema and the role:
// the tables and privileges of postgres.LogPublisherNeeds and the
// REPLICATION attribute.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool) error {
	if err := postgres.CheckSchema(ctx, pool, postgres.LogPublisherNeeds); err != nil {
		return err
	}
	return postgres.CheckReplication(ctx, pool)
}

// Leader is the session lock that makes one relay the slot's reader.
type Leader struct{ conn *pgx.Conn }

// TryLead takes the slot's reader lock (a session advisory lock on a
// connection of its own) or reports false: another relay reads the slot.
// The lock ends with Release or with the connection (a crashed process).
func (s *Store) TryLead(ctx context.Context, slot string) (*Leader, bool, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("taking the slot's reader lock: %w", postgres.Classify(err))
	}
	conn := c.Hijack() // the lock lives as long as this connection
	var ok bool
	// Keepalives end the session (and the lock) within about 11s of the
	// reader's host vanishing, not after the system's 2 hours.
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1), set_config('tcp_keepalives_idle', '5', false),
		set_config('tcp_keepalives_interval', '2', false), set_config('tcp_keepalives_count', '3', false)`,
		lockKey(slot)).Scan(&ok, nil, nil, nil); err != nil || !ok {
		_ = conn.Close(context.Background())
		if err != nil {
			return nil, false, fmt.Errorf("taking the slot's reader lock: %w", postgres.Classify(err))
		}
		return nil, false, nil
	}
	return &Leader{conn: conn}, true, nil
}

// Alive checks that the lock's connection still answers.
func (l *Leader) Alive(ctx context.Context) error {
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("the slot's reader lock is lost: %w", postgres.Classify(err))
	}
	return nil
}

// Release ends the lock.
func (l *Leader) Release() { _ = l.conn.Close(context.Background()) }

func lockKey(slot string) int64 {
	h := fnv.New64a()
	h.Write([]byte("eventrelay.logread." + slot))
	return int64(h.Sum64())
}

// EnsurePublication creates publication (the inserts and updates of
// schema.outbox_events: an update back to pending is a replay) when it
// does not exist, and adds updates to one that publishes inserts only.
// Both need the table's owner: for another role, relayctl grants
// --publisher-mode log prints the SQL for the owner to run.
func (s *Store) EnsurePublication(ctx context.Context, publication string) error {
	var updates *bool
	err := s.pool.QueryRow(ctx, `SELECT pubupdate FROM pg_publication WHERE pubname = $1`, publication).Scan(&updates)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("reading publication %s: %w", publication, postgres.Classify(err))
	}
	name := pgx.Identifier{publication}.Sanitize()
	var sql string
	switch {
	case updates == nil:
		sql = fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update')`,
			name, pgx.Identifier{s.schema, "outbox_events"}.Sanitize())
	case !*updates:
		sql = fmt.Sprintf(`ALTER PUBLICATION %s SET (publish = 'insert, update')`, name)
	default:
		return nil
	}
	if _, err := s.pool.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s (as the outbox table's owner: relayctl grants --publisher-mode log): %w", sql, postgres.Classify(err))
	}
	return nil
}

// SlotState is what Postgres says of a slot.
type SlotState int

// The states of a slot.
const (
	SlotMissing     SlotState = iota // never created, or dropped
	SlotLost                         // invalidated: its WAL is gone
	SlotUnrecovered                  // its recovery never ended (its reader died or was held): the slot stands
	SlotReady
)

// Slot reads slot's state and confirmed position. A lost slot is
// dropped: a new one replaces it. An unrecovered one stands: it still
// holds every change after its creation, and its confirmed position has
// not passed it (the recovery is the watermark's first transaction).
func (s *Store) Slot(ctx context.Context, slot string) (SlotState, pglogrepl.LSN, error) {
	var walStatus *string
	var confirmed *pglogrepl.LSN
	var recovering bool
	var database, plugin *string
	err := s.pool.QueryRow(ctx, `SELECT s.wal_status, s.confirmed_flush_lsn, coalesce(l.recovering, false), s.database::text, s.plugin::text
		FROM pg_replication_slots s LEFT JOIN outbox_log_slots l ON l.slot_name = s.slot_name
		WHERE s.slot_name = $1`, slot).Scan(&walStatus, &confirmed, &recovering, &database, &plugin)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return SlotMissing, 0, nil
	case err != nil:
		return 0, 0, fmt.Errorf("reading slot %s: %w", slot, postgres.Classify(err))
	}
	var here string
	if err := s.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&here); err != nil {
		return 0, 0, fmt.Errorf("reading slot %s: %w", slot, postgres.Classify(err))
	}
	if database == nil || *database != here || plugin == nil || *plugin != "pgoutput" {
		// Slot names are cluster-wide: never touch another's.
		return 0, 0, fmt.Errorf("slot %s belongs to another database or plugin (%v, %v): choose another name (Options.Log.Slot)", slot, deref(database), deref(plugin))
	}
	if confirmed != nil && (walStatus == nil || *walStatus != "lost") {
		if recovering {
			return SlotUnrecovered, *confirmed, nil
		}
		return SlotReady, *confirmed, nil
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err != nil {
		return 0, 0, fmt.Errorf("dropping slot %s to replace it: %w", slot, postgres.Classify(err))
	}
	return SlotLost, 0, nil
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

// Lag is how far the slot's confirmed position is behind the WAL, in
// bytes (0 when the slot does not exist), and max_slot_wal_keep_size in
// bytes (-1: unlimited).
func (s *Store) Lag(ctx context.Context, slot string) (lag, keep int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT coalesce((SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint
		FROM pg_replication_slots WHERE slot_name = $1), 0),
		(SELECT CASE WHEN setting::bigint < 0 THEN -1 ELSE setting::bigint * 1024 * 1024 END
		 FROM pg_settings WHERE name = 'max_slot_wal_keep_size')`, slot).Scan(&lag, &keep)
	if err != nil {
		return 0, 0, fmt.Errorf("reading slot %s's lag: %w", slot, postgres.Classify(err))
	}
	return lag, keep, nil
}

// Probe is a transaction horizon and a WAL position read together: every
// transaction older than Xmin had committed (or aborted) before At, so
// once the slot is confirmed past At, every row those transactions
// inserted is done.
type Probe struct {
	Xmin int64 // 32-bit transaction id
	At   pglogrepl.LSN
}

// horizon is the oldest transaction running in the statement's snapshot,
// as a 32-bit id (what a row's xmin holds).
const horizon = `(pg_snapshot_xmin(pg_current_snapshot())::text::bigint % 4294967296)`

// Probe reads a horizon and the WAL insert position after it.
func (s *Store) Probe(ctx context.Context) (Probe, error) {
	var p Probe
	if err := s.pool.QueryRow(ctx, `SELECT `+horizon+`, pg_current_wal_insert_lsn()`).Scan(&p.Xmin, &p.At); err != nil {
		return Probe{}, fmt.Errorf("probing the transaction horizon: %w", postgres.Classify(err))
	}
	return p, nil
}

// BeginRecovery records, before a slot is created, that its recovery has
// not finished.
func (s *Store) BeginRecovery(ctx context.Context, slot string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO outbox_log_slots (slot_name, recovering) VALUES ($1, true)
		ON CONFLICT (slot_name) DO UPDATE SET recovering = true, updated_at = now()`, slot)
	if err != nil {
		return fmt.Errorf("recording slot %s's recovery: %w", slot, postgres.Classify(err))
	}
	return nil
}

// SavePublished records that every row inserted by a transaction older
// than xmin is published (or failed), and that slot was confirmed to at:
// one row per slot, updated in place. A recovery is over.
func (s *Store) SavePublished(ctx context.Context, slot string, xmin int64, at pglogrepl.LSN) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO outbox_log_slots (slot_name, published_xmin, confirmed_lsn) VALUES ($1, $2, $3)
		ON CONFLICT (slot_name) DO UPDATE SET published_xmin = excluded.published_xmin,
			confirmed_lsn = excluded.confirmed_lsn, recovering = false, updated_at = now()`, slot, xmin, at)
	if err != nil {
		return fmt.Errorf("recording slot %s's published horizon: %w", slot, postgres.Classify(err))
	}
	return nil
}

// Fail ends an event that failed for its own fault, as the polling
// relay's mark does (status failed, error_reason, error_history), so
// relayctl's tools for failed rows see it. Later rows of its key wait
// behind it.
func (s *Store) Fail(ctx context.Context, f claim.Failure, worker string) error {
	_, err := s.pool.Exec(ctx, `UPDATE outbox_events o
		SET status = 'failed', failed_at = now(),
		    attempts = o.attempts + CASE WHEN $5 THEN 1 ELSE 0 END,
		    last_error = $4, error_reason = $2,
		    error_history = CASE WHEN jsonb_array_length(o.error_history) >= 20 THEN o.error_history - 0 ELSE o.error_history END
		        || jsonb_build_array(jsonb_build_object('at', now(), 'reason', $3::text, 'error', $4::text,
		               'attempt', o.attempts + CASE WHEN $5 THEN 1 ELSE 0 END, 'worker', $6::text))
		WHERE o.id = $1 AND o.status = 'pending'`,
		f.ID, string(f.Reason), string(f.Cause), f.Err, f.Attempted, worker)
	if err != nil {
		return fmt.Errorf("recording the failure of row %d: %w", f.ID, postgres.Classify(err))
	}
	return nil
}

// Key is a (row topic, ordering key): the unit the head-of-line rule holds.
type Key struct{ Topic, OrderingKey string }

// HeldKeys are the keys with a failed row: their later rows wait.
func (s *Store) HeldKeys(ctx context.Context) (map[Key]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT topic, ordering_key FROM outbox_events WHERE status = 'failed'`)
	if err != nil {
		return nil, fmt.Errorf("reading the keys held by failed rows: %w", postgres.Classify(err))
	}
	held := map[Key]bool{}
	for rows.Next() {
		var k Key
		if err := rows.Scan(&k.Topic, &k.OrderingKey); err != nil {
			return nil, fmt.Errorf("reading the keys held by failed rows: %w", postgres.Classify(err))
		}
		held[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the keys held by failed rows: %w", postgres.Classify(err))
	}
	return held, nil
}

var snapshotName = regexp.MustCompile(`^[0-9A-F-]+$`)

// Unpublished reads, in the snapshot a new slot exported (or, for an
// unrecovered slot, snapshot "", the transaction's own), the rows not
// known to be published: pending rows inserted at or after the slot's
// recorded horizon (every pending row when none is recorded: the first
// start, e.g. after the polling relay) or behind a row of their key
// replayed or resolved at or after it (which released them), not behind a failed row of their
// key, in id order, page by page to each. It returns the horizon of the
// snapshot: once each's rows are done, every row before the new slot is.
// The scan reads the whole table (a row's xmin has no index): slot loss
// is rare.
func (s *Store) Unpublished(ctx context.Context, slot, snapshot string, page int, each func([]claim.Event) error) (int64, error) {
	if snapshot != "" && !snapshotName.MatchString(snapshot) {
		return 0, fmt.Errorf("unexpected snapshot name %q", snapshot)
	}
	var xmin int64
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if snapshot == "" {
			// An unrecovered slot's recovery again: rows committed since
			// its creation are read here and streamed too (duplicates).
		} else if _, err := tx.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`); err != nil {
			return err
		}
		var since *int64
		err := tx.QueryRow(ctx, `SELECT published_xmin FROM outbox_log_slots WHERE slot_name = $1`, slot).Scan(&since)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT `+horizon).Scan(&xmin); err != nil {
			return err
		}
		after := int64(0)
		for {
			rows, err := tx.Query(ctx, `SELECT `+eventColumns+`
				FROM outbox_events o
				WHERE o.status = 'pending' AND o.id > $1
				  AND ($2::bigint IS NULL OR age(o.xmin) <= age($2::bigint::text::xid)
				       OR EXISTS (SELECT 1 FROM outbox_events b
				                  WHERE b.topic = o.topic AND b.ordering_key = o.ordering_key AND b.id < o.id
				                    AND (b.status = 'resolved' OR b.replay_count > 0)
				                    AND age(b.xmin) <= age($2::bigint::text::xid)))
				  AND NOT EXISTS (SELECT 1 FROM outbox_events f
				                  WHERE f.status = 'failed' AND f.topic = o.topic AND f.ordering_key = o.ordering_key AND f.id < o.id)
				ORDER BY o.id LIMIT $3`, after, since, page)
			if err != nil {
				return err
			}
			events, err := pgx.CollectRows(rows, scanEvent)
			if err != nil || len(events) == 0 {
				return err
			}
			if err := each(events); err != nil {
				return err
			}
			after = events[len(events)-1].ID
		}
	})
	if err != nil {
		return 0, fmt.Errorf("reading the rows not known to be published: %w", postgres.Classify(err))
	}
	return xmin, nil
}

// eventColumns are the columns of an outbox row o that scanEvent reads.
const eventColumns = `o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.aggregate_version,
	o.event_type, o.schema_version, o.ordering_key, o.topic, o.headers::text, o.payload,
	o.occurred_at, o.created_at, o.attempts`

func scanEvent(r pgx.CollectableRow) (claim.Event, error) {
	var e claim.Event
	var headers string
	err := r.Scan(&e.ID, &e.EventID, &e.AggregateType, &e.AggregateID, &e.AggregateVersion, &e.EventType,
		&e.SchemaVersion, &e.OrderingKey, &e.Topic, &headers, &e.Payload, &e.OccurredAt, &e.CreatedAt, &e.Attempts)
	e.Headers = claim.DecodeHeaders(headers)
	return e, err
}

// Pending reads row id if it is pending (ok false otherwise): a replayed
// row whose update the stream carried without all its columns.
func (s *Store) Pending(ctx context.Context, id int64) (e claim.Event, ok bool, err error) {
	rows, err := s.pool.Query(ctx, `SELECT `+eventColumns+` FROM outbox_events o WHERE o.id = $1 AND o.status = 'pending'`, id)
	if err == nil {
		e, err = pgx.CollectExactlyOneRow(rows, scanEvent)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return e, false, nil
	case err != nil:
		return e, false, fmt.Errorf("reading replayed row %d: %w", id, postgres.Classify(err))
	}
	return e, true, nil
}

// Released reads what a replay or resolution of key's row from released:
// the pending rows of key from that id on that no failed row of the key
// precedes, in id order (at most limit), and whether a failed row of the
// key remains (the key stays held).
func (s *Store) Released(ctx context.Context, key Key, from int64, limit int) (events []claim.Event, held bool, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+eventColumns+`
			FROM outbox_events o
			WHERE o.topic = $1 AND o.ordering_key = $2 AND o.status = 'pending' AND o.id >= $3
			  AND NOT EXISTS (SELECT 1 FROM outbox_events f
			                  WHERE f.status = 'failed' AND f.topic = o.topic AND f.ordering_key = o.ordering_key AND f.id < o.id)
			ORDER BY o.id LIMIT $4`, key.Topic, key.OrderingKey, from, limit)
		if err != nil {
			return err
		}
		if events, err = pgx.CollectRows(rows, scanEvent); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox_events WHERE status = 'failed' AND topic = $1 AND ordering_key = $2)`,
			key.Topic, key.OrderingKey).Scan(&held)
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading the rows a replay released: %w", postgres.Classify(err))
	}
	return events, held, nil
}

// DeletePublished deletes up to limit rows the log mode published more
// than age ago: pending rows (the log mode never marks a row) inserted by
// a transaction older than the published horizon of every slot in
// outbox_log_slots (none recovering, at least one recorded), with no
// earlier row of their key failed, or replayed or resolved at or after a
// horizon (the rows such a row holds or released may not be published
// yet). A slot with no horizon yet, or abandoned, stops it: rows are kept
// rather than guessed published.
func (s *Store) DeletePublished(ctx context.Context, age time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM outbox_events WHERE id IN (
		SELECT o.id FROM outbox_events o
		WHERE o.status = 'pending'
		  AND o.created_at < now() - make_interval(secs => $1::float8)
		  AND EXISTS (SELECT 1 FROM outbox_log_slots)
		  AND NOT EXISTS (SELECT 1 FROM outbox_log_slots l
		                  WHERE l.published_xmin IS NULL OR l.recovering
		                     OR age(o.xmin) <= age(l.published_xmin::text::xid))
		  AND NOT EXISTS (SELECT 1 FROM outbox_events b
		                  WHERE b.topic = o.topic AND b.ordering_key = o.ordering_key AND b.id < o.id
		                    AND (b.status = 'failed'
		                         OR ((b.status = 'resolved' OR b.replay_count > 0)
		                             AND EXISTS (SELECT 1 FROM outbox_log_slots l
		                                         WHERE age(b.xmin) <= age(l.published_xmin::text::xid)))))
		ORDER BY o.id
		LIMIT $2
		FOR UPDATE OF o SKIP LOCKED)`, age.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("deleting the rows the log mode published: %w", postgres.Classify(err))
	}
	return tag.RowsAffected(), nil
}
