package claim

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// Store claims outbox rows and records their outcomes on Postgres (sqlc
// queries in sqlc/queries/outbox/publisher.sql). Every method that takes
// a token is fenced: it changes only rows still claimed under that token.
// Errors are classified with postgres.Classify.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool (search_path = the outbox schema).
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Ping checks that Postgres answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pinging postgres: %w", postgres.Classify(err))
	}
	return nil
}

// CheckSchema checks that the schema holds the relay's tables (an
// unmigrated database or a wrong DATABASE_SCHEMA is schema_missing).
func (s *Store) CheckSchema(ctx context.Context) error {
	return postgres.CheckSchema(ctx, s.pool, postgres.PublisherNeeds)
}

// inLockedTx runs f in a transaction whose first statement takes the
// claim locks of partitions, so claims and reclaims of one partition (by
// any replica) are serialized.
func (s *Store) inLockedTx(ctx context.Context, partitions []int32, f func(q *outboxdb.Queries) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, postgres.ClaimTx, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		if err := q.LockClaimPartitions(ctx, partitions); err != nil {
			return fmt.Errorf("taking the partitions' claim locks: %w", err)
		}
		return f(q)
	})
}

// Claim atomically claims up to req.Limit ready rows of req.Partitions
// under the head-of-line rule, in id order.
func (s *Store) Claim(ctx context.Context, req Request) ([]Event, error) {
	var rows []outboxdb.ClaimOutboxEventsRow
	err := s.inLockedTx(ctx, req.Partitions, func(q *outboxdb.Queries) error {
		var err error
		rows, err = q.ClaimOutboxEvents(ctx, outboxdb.ClaimOutboxEventsParams{
			WorkerID:     req.Worker,
			LockToken:    req.Token,
			LeaseSeconds: req.Lease.Seconds(),
			BatchSize:    int32(req.Limit),
			TopicShare:   int32(max(1, req.Limit/4)), // each topic's oldest, so no topic waits behind another's backlog
			Partitions:   req.Partitions,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming outbox rows: %w", postgres.Classify(err))
	}
	// In id order. Sorting the row indexes, not the rows: swapping
	// structs of this size (pointers, so write barriers) cost more than
	// the rest of the mapping.
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(rows[a].ID, rows[b].ID) })
	events := make([]Event, len(rows))
	for i, j := range order {
		r := &rows[j]
		events[i] = Event{
			ID: r.ID, EventID: r.EventID, AggregateType: r.AggregateType, AggregateID: r.AggregateID,
			AggregateVersion: r.AggregateVersion, EventType: r.EventType, SchemaVersion: r.SchemaVersion,
			OrderingKey: r.OrderingKey, Topic: r.Topic, Headers: decodeHeaders(r.Headers),
			Payload: r.Payload, OccurredAt: r.OccurredAt, CreatedAt: r.CreatedAt, Attempts: r.Attempts,
		}
	}
	return events, nil
}

// Mark records all outcomes of a batch in one transaction, each kind a
// single statement over arrays.
func (s *Store) Mark(ctx context.Context, token uuid.UUID, o Outcomes) (Applied, error) {
	var a Applied
	err := pgx.BeginTxFunc(ctx, s.pool, postgres.OutcomeTx, func(tx pgx.Tx) error {
		a = Applied{}
		q := outboxdb.New(tx)
		if len(o.Published) > 0 {
			p := outboxdb.MarkOutboxPublishedParams{LockToken: token}
			for _, x := range o.Published {
				p.Ids = append(p.Ids, x.ID)
				p.MessageIds = append(p.MessageIds, x.MessageID)
			}
			rows, err := q.MarkOutboxPublished(ctx, p)
			if err != nil {
				return fmt.Errorf("marking published: %w", err)
			}
			for _, r := range rows {
				a.Published = append(a.Published, PublishedRow{ID: r.ID, Latency: time.Duration(r.LatencySeconds * float64(time.Second))})
			}
		}
		if len(o.Rescheduled) > 0 {
			p := outboxdb.ScheduleOutboxRetryParams{LockToken: token}
			for _, x := range o.Rescheduled {
				p.Ids = append(p.Ids, x.ID)
				p.DelaySeconds = append(p.DelaySeconds, x.Delay.Seconds())
				p.Reasons = append(p.Reasons, string(x.Reason))
				p.Errors = append(p.Errors, x.Err)
				p.Held = append(p.Held, x.Held)
			}
			n, err := q.ScheduleOutboxRetry(ctx, p)
			if err != nil {
				return fmt.Errorf("scheduling retries: %w", err)
			}
			a.Rescheduled = n
		}
		if len(o.Failures) > 0 {
			p := outboxdb.MarkOutboxFailedParams{LockToken: token}
			for _, x := range o.Failures {
				p.Ids = append(p.Ids, x.ID)
				p.Reasons = append(p.Reasons, string(x.Reason))
				p.Causes = append(p.Causes, string(x.Cause))
				p.Errors = append(p.Errors, x.Err)
				p.Attempted = append(p.Attempted, x.Attempted)
			}
			n, err := q.MarkOutboxFailed(ctx, p)
			if err != nil {
				return fmt.Errorf("marking failed: %w", err)
			}
			a.Failed = n
		}
		if len(o.Released) > 0 {
			n, err := q.ReleaseOutboxEvents(ctx, outboxdb.ReleaseOutboxEventsParams{LockToken: token, Ids: o.Released})
			if err != nil {
				return fmt.Errorf("releasing: %w", err)
			}
			a.Released = n
		}
		return settle(ctx, q, token, int64(len(a.Published))+a.Rescheduled+a.Failed+a.Released)
	})
	if err != nil {
		return Applied{}, fmt.Errorf("recording outcomes of claim %s: %w", token, postgres.Classify(err))
	}
	return a, nil
}

// settle counts n rows of the claim token as settled (its lease row in
// outbox_claims), in the transaction of their fenced writes.
func settle(ctx context.Context, q *outboxdb.Queries, token uuid.UUID, n int64) error {
	if n == 0 {
		return nil
	}
	if err := q.SettleOutboxClaim(ctx, outboxdb.SettleOutboxClaimParams{LockToken: token, Settled: int32(n)}); err != nil {
		return fmt.Errorf("settling the claim's lease: %w", err)
	}
	return nil
}

// Release implements Store.
func (s *Store) Release(ctx context.Context, token uuid.UUID, ids []int64) (int64, error) {
	var n int64
	err := pgx.BeginTxFunc(ctx, s.pool, postgres.OutcomeTx, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		var err error
		if n, err = q.ReleaseOutboxEvents(ctx, outboxdb.ReleaseOutboxEventsParams{LockToken: token, Ids: ids}); err != nil {
			return err
		}
		return settle(ctx, q, token, n)
	})
	if err != nil {
		return 0, fmt.Errorf("releasing claim %s: %w", token, postgres.Classify(err))
	}
	return n, nil
}

// ExtendLease implements Store. The lease is the claim's one row in
// outbox_claims (ids are not needed); n is how many rows the claim still
// holds, 0 once it was taken over or settled.
func (s *Store) ExtendLease(ctx context.Context, token uuid.UUID, _ []int64, lease time.Duration) (int64, error) {
	held, err := outboxdb.New(s.pool).ExtendOutboxLease(ctx, outboxdb.ExtendOutboxLeaseParams{
		LockToken: token, LeaseSeconds: lease.Seconds(),
	})
	if err != nil {
		return 0, fmt.Errorf("extending lease of claim %s: %w", token, postgres.Classify(err))
	}
	var n int64
	for _, h := range held {
		n += h
	}
	return n, nil
}

// Reclaim implements Store.
func (s *Store) Reclaim(ctx context.Context, maxProcessing time.Duration, partitions []int32) ([]Takeover, error) {
	var rows []outboxdb.ReclaimOutboxEventsRow
	err := s.inLockedTx(ctx, partitions, func(q *outboxdb.Queries) error {
		var err error
		rows, err = q.ReclaimOutboxEvents(ctx, outboxdb.ReclaimOutboxEventsParams{
			MaxProcessingSeconds: maxProcessing.Seconds(), Partitions: partitions,
		})
		if err != nil {
			return err
		}
		_, err = q.DeleteSettledOutboxClaims(ctx, outboxdb.DeleteSettledOutboxClaimsParams{
			MaxProcessingSeconds: maxProcessing.Seconds(), Partitions: partitions,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reclaiming expired claims: %w", postgres.Classify(err))
	}
	out := make([]Takeover, len(rows))
	for i, r := range rows {
		out[i] = Takeover{ID: r.ID, PreviousWorker: r.PreviousWorker}
	}
	return out, nil
}
