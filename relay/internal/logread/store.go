package logread

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
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

// Leader is the session lock that makes one relay the slot's reader. It
// pings the lock's connection: when a ping fails, Postgres has ended the
// session and released the lock (another relay may hold it now), and
// Lost is closed.
type Leader struct {
	conn *pgx.Conn
	lost chan struct{} // closed: the lock's connection failed
	stop chan struct{} // closed by Release
	done chan struct{} // the pings ended
}

// leaderPingTimeout bounds one ping of the lock's connection; a ping that
// times out closes the connection, so the lock is lost then too.
const leaderPingTimeout = 5 * time.Second

// TryLead takes the slot's reader lock (a session advisory lock on a
// connection of its own, pinged every check) or reports false: another
// relay reads the slot. The lock ends with Release or with the connection
// (a crashed process, a terminated backend).
func (s *Store) TryLead(ctx context.Context, slot string, check time.Duration) (*Leader, bool, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("taking the slot's reader lock: %w", postgres.Classify(err))
	}
	conn := c.Hijack() // the lock lives as long as this connection
	row, err := outboxdb.New(conn).TryLockOutboxLogReader(ctx, lockKey(slot))
	if err != nil || !row.Locked {
		_ = conn.Close(context.Background())
		if err != nil {
			return nil, false, fmt.Errorf("taking the slot's reader lock: %w", postgres.Classify(err))
		}
		return nil, false, nil
	}
	l := &Leader{conn: conn, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.ping(check)
	return l, true, nil
}

// ping pings the lock's connection every check until Release or a
// failure (then Lost is closed).
func (l *Leader) ping(check time.Duration) {
	defer close(l.done)
	t := time.NewTicker(check)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), leaderPingTimeout)
		err := l.conn.Ping(ctx)
		cancel()
		if err != nil {
			close(l.lost)
			return
		}
	}
}

// Lost is closed once the lock's connection failed: the lock is gone.
func (l *Leader) Lost() <-chan struct{} { return l.lost }

// Alive reports an error once the lock is lost.
func (l *Leader) Alive() error {
	select {
	case <-l.lost:
		return errors.New("the slot's reader lock is lost: its connection ended")
	default:
		return nil
	}
}

// Release ends the lock.
func (l *Leader) Release() {
	close(l.stop)
	<-l.done
	_ = l.conn.Close(context.Background())
}

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
	switch u, err := outboxdb.New(s.pool).OutboxPublicationUpdates(ctx, publication); {
	case err == nil:
		updates = &u
	case !errors.Is(err, pgx.ErrNoRows):
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
	q := outboxdb.New(s.pool)
	row, err := q.OutboxLogSlot(ctx, slot)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return SlotMissing, 0, nil
	case err != nil:
		return 0, 0, fmt.Errorf("reading slot %s: %w", slot, postgres.Classify(err))
	}
	if row.Database != row.Here || row.Plugin != "pgoutput" {
		// Slot names are cluster-wide: never touch another's.
		return 0, 0, fmt.Errorf("slot %s belongs to another database or plugin (%v, %v): choose another name (Options.Log.Slot)", slot, orNone(row.Database), orNone(row.Plugin))
	}
	if row.ConfirmedLsn != "" && row.WalStatus != "lost" {
		at, err := pglogrepl.ParseLSN(row.ConfirmedLsn)
		if err != nil {
			return 0, 0, fmt.Errorf("reading slot %s: %w", slot, err)
		}
		if row.Recovering {
			return SlotUnrecovered, at, nil
		}
		return SlotReady, at, nil
	}
	if err := q.DropOutboxLogSlot(ctx, slot); err != nil {
		return 0, 0, fmt.Errorf("dropping slot %s to replace it: %w", slot, postgres.Classify(err))
	}
	return SlotLost, 0, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Lag is how far the slot's confirmed position is behind the WAL, in
// bytes (0 when the slot does not exist), and max_slot_wal_keep_size in
// bytes (-1: unlimited).
func (s *Store) Lag(ctx context.Context, slot string) (lag, keep int64, err error) {
	row, err := outboxdb.New(s.pool).OutboxLogLag(ctx, slot)
	if err != nil {
		return 0, 0, fmt.Errorf("reading slot %s's lag: %w", slot, postgres.Classify(err))
	}
	return row.LagBytes, row.KeepBytes, nil
}

// Probe is a transaction horizon and a WAL position read together: every
// transaction older than Xmin had committed (or aborted) before At, so
// once the slot is confirmed past At, every row those transactions
// inserted is done.
type Probe struct {
	Xmin int64 // 32-bit transaction id
	At   pglogrepl.LSN
}

// Probe reads a horizon and the WAL insert position after it.
func (s *Store) Probe(ctx context.Context) (Probe, error) {
	row, err := outboxdb.New(s.pool).ProbeOutboxLogHorizon(ctx)
	if err != nil {
		return Probe{}, fmt.Errorf("probing the transaction horizon: %w", postgres.Classify(err))
	}
	at, err := pglogrepl.ParseLSN(row.At)
	if err != nil {
		return Probe{}, fmt.Errorf("probing the transaction horizon: %w", err)
	}
	return Probe{Xmin: row.Xmin, At: at}, nil
}

// BeginRecovery records, before a slot is created, that its recovery has
// not finished.
func (s *Store) BeginRecovery(ctx context.Context, slot string) error {
	if err := outboxdb.New(s.pool).BeginOutboxLogRecovery(ctx, slot); err != nil {
		return fmt.Errorf("recording slot %s's recovery: %w", slot, postgres.Classify(err))
	}
	return nil
}

// SavePublished records that every row inserted by a transaction older
// than xmin is published (or failed), and that slot was confirmed to at:
// one row per slot, updated in place. A recovery is over.
func (s *Store) SavePublished(ctx context.Context, slot string, xmin int64, at pglogrepl.LSN) error {
	err := outboxdb.New(s.pool).SaveOutboxLogPublished(ctx, outboxdb.SaveOutboxLogPublishedParams{
		SlotName: slot, PublishedXmin: xmin, ConfirmedLsn: at.String()})
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
	_, err := outboxdb.New(s.pool).FailLogOutboxEvent(ctx, outboxdb.FailLogOutboxEventParams{
		ID: f.ID, Reason: string(f.Reason), Cause: string(f.Cause), Error: f.Err, Attempted: f.Attempted, WorkerID: worker})
	if err != nil {
		return fmt.Errorf("recording the failure of row %d: %w", f.ID, postgres.Classify(err))
	}
	return nil
}

// Key is a (row topic, ordering key): the unit the head-of-line rule holds.
type Key struct{ Topic, OrderingKey string }

// HeldKeys are the keys with a failed row: their later rows wait.
func (s *Store) HeldKeys(ctx context.Context) (map[Key]bool, error) {
	rows, err := outboxdb.New(s.pool).OutboxHeldKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the keys held by failed rows: %w", postgres.Classify(err))
	}
	held := make(map[Key]bool, len(rows))
	for _, r := range rows {
		held[Key{Topic: r.Topic, OrderingKey: r.OrderingKey}] = true
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
		q := outboxdb.New(tx)
		since, err := q.OutboxLogPublishedXmin(ctx, slot)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		probe, err := q.ProbeOutboxLogHorizon(ctx)
		if err != nil {
			return err
		}
		xmin = probe.Xmin
		for after := int64(0); ; {
			rows, err := q.UnpublishedOutboxEvents(ctx, outboxdb.UnpublishedOutboxEventsParams{AfterID: after, Since: since, RowLimit: int32(page)})
			if err != nil || len(rows) == 0 {
				return err
			}
			events := make([]claim.Event, len(rows))
			for i := range rows {
				events[i] = eventOf(&rows[i].OutboxEvent)
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

// eventOf is the event of an outbox row.
func eventOf(o *outboxdb.OutboxEvent) claim.Event {
	return claim.Event{
		ID: o.ID, EventID: o.EventID, AggregateType: o.AggregateType, AggregateID: o.AggregateID,
		AggregateVersion: o.AggregateVersion, EventType: o.EventType, SchemaVersion: o.SchemaVersion,
		OrderingKey: o.OrderingKey, Topic: o.Topic, Headers: claim.DecodeHeaders(string(o.Headers)),
		Payload: o.Payload, OccurredAt: o.OccurredAt, CreatedAt: o.CreatedAt, Attempts: o.Attempts,
	}
}

// Pending reads row id if it is pending (ok false otherwise): a replayed
// row whose update the stream carried without all its columns.
func (s *Store) Pending(ctx context.Context, id int64) (e claim.Event, ok bool, err error) {
	rows, err := outboxdb.New(s.pool).PendingOutboxEvent(ctx, id)
	if err != nil {
		return e, false, fmt.Errorf("reading replayed row %d: %w", id, postgres.Classify(err))
	}
	if len(rows) == 0 {
		return e, false, nil
	}
	return eventOf(&rows[0].OutboxEvent), true, nil
}

// Released reads what a replay or resolution of key's row from released:
// the pending rows of key from that id on that no failed row of the key
// precedes, in id order (at most limit), and whether a failed row of the
// key remains (the key stays held).
func (s *Store) Released(ctx context.Context, key Key, from int64, limit int) (events []claim.Event, held bool, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		rows, err := q.ReleasedOutboxEvents(ctx, outboxdb.ReleasedOutboxEventsParams{
			Topic: key.Topic, OrderingKey: key.OrderingKey, FromID: from, RowLimit: int32(limit)})
		if err != nil {
			return err
		}
		events = make([]claim.Event, len(rows))
		for i := range rows {
			events[i] = eventOf(&rows[i].OutboxEvent)
		}
		held, err = q.OutboxKeyHeld(ctx, outboxdb.OutboxKeyHeldParams{Topic: key.Topic, OrderingKey: key.OrderingKey})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading the rows a replay released: %w", postgres.Classify(err))
	}
	return events, held, nil
}

// DeletePublished deletes up to limit rows published more than age ago:
// the rows relayctl selects as published (SelectOutboxRows, which holds
// the log mode's rule: pending rows below every slot's published
// horizon, not behind a failed or later-replayed row of their key; and
// rows the polling relay marked published), each only if it is still as
// selected (not replayed or failed since).
func (s *Store) DeletePublished(ctx context.Context, age time.Duration, limit int) (int64, error) {
	q := outboxdb.New(s.pool)
	rows, err := q.SelectOutboxRows(ctx, outboxdb.SelectOutboxRowsParams{
		Statuses: []string{"published"}, RowIds: []int64{}, EventIds: []uuid.UUID{},
		Until: pgtype.Timestamptz{Time: time.Now().Add(-age), Valid: true}, RowLimit: int32(limit)})
	if err != nil {
		return 0, fmt.Errorf("selecting the published rows: %w", postgres.Classify(err))
	}
	if len(rows) == 0 {
		return 0, nil
	}
	p := outboxdb.DeleteUnchangedOutboxRowsParams{
		Ids: make([]int64, len(rows)), Statuses: make([]string, len(rows)), ReplayCounts: make([]int32, len(rows))}
	for i, r := range rows {
		p.Ids[i], p.Statuses[i], p.ReplayCounts[i] = r.ID, r.Status, r.ReplayCount
	}
	n, err := q.DeleteUnchangedOutboxRows(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("deleting the published rows: %w", postgres.Classify(err))
	}
	return n, nil
}
