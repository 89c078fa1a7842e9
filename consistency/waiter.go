package consistency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrTimeout is returned by Wait when the read model has not reached every
// token's version within the wait.
var ErrTimeout = errors.New("read model has not caught up with the consistency token")

// Lookup answers "which version of this aggregate does the read model
// hold?": 0 when none. A tombstone's version counts.
type Lookup func(ctx context.Context, aggregateType, aggregateID string) (int64, error)

// InboxLookup answers from the projector's inbox (inbox_events): the
// highest aggregate version the consumer has recorded for the key, read on
// the index inbox_events_aggregate_idx. It works for every read model the
// projector fills, whatever its shape; the inbox forgets events after the
// projection's InboxRetention, so a token older than that waits in vain
// (a read model's own version column, TableLookup, keeps them).
func InboxLookup(pool *pgxpool.Pool, consumer string) Lookup {
	return func(ctx context.Context, aggregateType, aggregateID string) (int64, error) {
		var v int64
		err := pool.QueryRow(ctx, `SELECT coalesce(max(aggregate_version), 0) FROM inbox_events
			WHERE consumer = $1 AND aggregate_type = $2 AND aggregate_id = $3`,
			consumer, aggregateType, aggregateID).Scan(&v)
		return v, err
	}
}

// TableLookup answers from the read model's own table: the version column
// of the row whose key column equals the aggregate id (0 when there is
// none), as "SELECT version FROM table WHERE key = $1" on an index of the
// key. The table and columns are identifiers (quoted here), resolved by
// pool's search_path; the aggregate id is sent as text and converted to
// the key column's type by Postgres. An id the key's type refuses (not a
// uuid for a uuid key: the token names no row the read model can hold)
// fails the wait with an error wrapping ErrMalformed, as a token that does
// not parse.
func TableLookup(pool *pgxpool.Pool, table, key, version string) Lookup {
	sql := "SELECT " + pgx.Identifier{version}.Sanitize() + " FROM " + pgx.Identifier{table}.Sanitize() +
		" WHERE " + pgx.Identifier{key}.Sanitize() + " = $1"
	return func(ctx context.Context, _, aggregateID string) (int64, error) {
		var v int64
		err := pool.QueryRow(ctx, sql, aggregateID).Scan(&v)
		var pgErr *pgconn.PgError
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return 0, nil
		case errors.As(err, &pgErr) && (pgErr.Code == "22P02" || pgErr.Code == "22003"): // invalid text representation, out of range
			return 0, fmt.Errorf("%w: aggregate id %q is not a value of %s.%s: %w", ErrMalformed, aggregateID, table, key, err)
		}
		return v, err
	}
}

// deadlineHeadroom is the most time Wait leaves before its caller's
// deadline for the caller's answer.
const deadlineHeadroom = 250 * time.Millisecond

// WaiterOptions configures a Waiter.
type WaiterOptions struct {
	// DefaultWait bounds a Wait given no duration (default 2s).
	DefaultWait time.Duration
	// MaxWait caps every Wait (default 10s).
	MaxWait time.Duration
	// Channel is the LISTEN channel (default Channel).
	Channel string
	Logger  *slog.Logger
}

// WithDefaults fills the zero fields.
func (o WaiterOptions) WithDefaults() WaiterOptions {
	if o.DefaultWait <= 0 {
		o.DefaultWait = 2 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 10 * time.Second
	}
	if o.DefaultWait > o.MaxWait {
		o.DefaultWait = o.MaxWait
	}
	if o.Channel == "" {
		o.Channel = Channel
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Waiter makes reads wait for their tokens. One per process: Run holds
// its single LISTEN connection.
type Waiter struct {
	pool *pgxpool.Pool
	o    WaiterOptions

	mu        sync.Mutex
	lookups   map[string]Lookup
	waiting   map[string]map[*waiting]struct{}
	listening bool
}

// waiting is one Wait call.
type waiting struct {
	mu      sync.Mutex
	pending map[Key]int64
	recheck bool
	wake    chan struct{}
}

// NewWaiter returns a Waiter listening through pool's configuration.
func NewWaiter(pool *pgxpool.Pool, o WaiterOptions) *Waiter {
	return &Waiter{pool: pool, o: o.WithDefaults(), lookups: map[string]Lookup{}, waiting: map[string]map[*waiting]struct{}{}}
}

// Register sets the lookup of readModel (its inbox consumer name).
func (w *Waiter) Register(readModel string, l Lookup) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lookups[readModel] = l
}

// Options are the waiter's effective options.
func (w *Waiter) Options() WaiterOptions { return w.o }

// Listening reports whether Run holds its LISTEN connection now.
func (w *Waiter) Listening() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.listening
}

// Wait returns once readModel holds every token's aggregate at its version
// or newer, ErrTimeout after d (DefaultWait when d <= 0, at most MaxWait;
// a look-up still running then is cancelled), or ctx's error when ctx is
// cancelled. Without tokens it returns at once. A deadline of ctx (a
// request timeout, which may equal MaxWait) ends the wait as ErrTimeout
// too, a twentieth of the time left (at most deadlineHeadroom) before it,
// so that the caller can still answer that the read model is behind.
func (w *Waiter) Wait(ctx context.Context, readModel string, tokens []Token, d time.Duration) error {
	if len(tokens) == 0 {
		return nil
	}
	w.mu.Lock()
	lookup := w.lookups[readModel]
	w.mu.Unlock()
	if lookup == nil {
		return fmt.Errorf("consistency: no lookup registered for read model %q", readModel)
	}
	if d <= 0 {
		d = w.o.DefaultWait
	}
	d = min(d, w.o.MaxWait)
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		d = max(0, min(d, left-min(left/20, deadlineHeadroom)))
	}
	wt := &waiting{pending: map[Key]int64{}, wake: make(chan struct{}, 1), recheck: true}
	for _, t := range tokens {
		k := Key{t.AggregateType, t.AggregateID}
		wt.pending[k] = max(wt.pending[k], t.AggregateVersion)
	}
	// Enrolled before the first look-up: an announcement between the
	// look-up and the enrolment would otherwise be missed.
	w.enrol(readModel, wt)
	defer w.leave(readModel, wt)
	// The look-ups are bounded by the wait too: one stuck on a busy pool
	// or a slow read model must not stretch the wait past d.
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		done, err := wt.check(wctx, lookup)
		if err != nil && wctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("%w (waited %s)", ErrTimeout, d)
		}
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w (waited %s, the caller's deadline)", ErrTimeout, d)
			}
			return ctx.Err()
		case <-wctx.Done():
			return fmt.Errorf("%w (waited %s)", ErrTimeout, d)
		case <-wt.wake:
		}
	}
}

// check looks up the pending keys when a re-check was asked for, and
// reports whether nothing is pending.
func (wt *waiting) check(ctx context.Context, lookup Lookup) (bool, error) {
	wt.mu.Lock()
	recheck := wt.recheck
	wt.recheck = false
	keys := make(map[Key]int64, len(wt.pending))
	for k, v := range wt.pending {
		keys[k] = v
	}
	wt.mu.Unlock()
	if recheck {
		for k, want := range keys {
			have, err := lookup(ctx, k.AggregateType, k.AggregateID)
			if err != nil {
				return false, fmt.Errorf("consistency: looking up %s %s: %w", k.AggregateType, k.AggregateID, err)
			}
			if have >= want {
				wt.mu.Lock()
				if wt.pending[k] <= have {
					delete(wt.pending, k)
				}
				wt.mu.Unlock()
			}
		}
	}
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return len(wt.pending) == 0, nil
}

func (w *Waiter) enrol(readModel string, wt *waiting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.waiting[readModel]
	if set == nil {
		set = map[*waiting]struct{}{}
		w.waiting[readModel] = set
	}
	set[wt] = struct{}{}
}

func (w *Waiter) leave(readModel string, wt *waiting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting[readModel], wt)
}

// deliver applies an announcement to the waiters of its read model.
func (w *Waiter) deliver(a Announcement) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wt := range w.waiting[a.ReadModel] {
		wt.mu.Lock()
		changed := a.All
		if a.All {
			wt.recheck = true
		}
		for k, want := range wt.pending {
			if have, ok := a.Versions[k]; ok && have >= want {
				delete(wt.pending, k)
				changed = true
			}
		}
		wt.mu.Unlock()
		if changed {
			select {
			case wt.wake <- struct{}{}:
			default:
			}
		}
	}
}

// recheckAll makes every waiter look up again (announcements may have
// been missed while not listening).
func (w *Waiter) recheckAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.waiting {
		for wt := range set {
			wt.mu.Lock()
			wt.recheck = true
			wt.mu.Unlock()
			select {
			case wt.wake <- struct{}{}:
			default:
			}
		}
	}
}

// Run listens for announcements until ctx ends, reconnecting after a
// failure. While it is not listening, waits only see their first look-up
// and time out otherwise.
func (w *Waiter) Run(ctx context.Context) {
	delay := 200 * time.Millisecond
	for ctx.Err() == nil {
		started := time.Now()
		err := w.session(ctx)
		w.setListening(false)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			delay = 200 * time.Millisecond
		}
		w.o.Logger.Warn("consistency LISTEN connection lost; reads with tokens time out until it is back",
			"error", err, "retry_in_ms", delay.Milliseconds())
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

func (w *Waiter) setListening(on bool) {
	w.mu.Lock()
	w.listening = on
	w.mu.Unlock()
}

func (w *Waiter) session(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connecting for LISTEN: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{w.o.Channel}.Sanitize()); err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}
	w.setListening(true)
	w.recheckAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("waiting for notifications: %w", err)
		}
		w.deliver(ParseAnnouncement(n.Payload))
	}
}
