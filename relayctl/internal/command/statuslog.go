package command

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// logSlot is a log-mode slot (relay.ModeLog) in status --json: the row
// of outbox_log_slots, what Postgres says of the slot and who reads it.
// Standbys hold no connection while they wait: the publishers'
// outbox_log_reader{state="standby"} gauge counts them.
type logSlot struct {
	Slot              string     `json:"slot"`
	Exists            bool       `json:"exists"`
	Active            bool       `json:"active"`
	WALStatus         string     `json:"wal_status,omitempty"`
	LagBytes          int64      `json:"lag_bytes"`
	HorizonAgeSeconds float64    `json:"horizon_age_seconds"`
	Recovering        bool       `json:"recovering"`
	Reader            string     `json:"reader,omitempty"` // the walsender's client address and application
	ReaderSince       *time.Time `json:"reader_since,omitempty"`
}

// logSlots reads the log-mode slots: each row of outbox_log_slots with
// its slot in this database, the WAL it retains (from its confirmed
// position to the current one), how long ago its published horizon
// moved, and its reader's walsender.
func logSlots(ctx context.Context, pool *pgxpool.Pool, rep *statusReport) error {
	rows, err := pool.Query(ctx, `SELECT l.slot_name, s.slot_name IS NOT NULL, coalesce(s.active, false), coalesce(s.wal_status, ''),
		       coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn), 0)::bigint,
		       extract(epoch FROM now() - l.updated_at)::float8, l.recovering,
		       coalesce(host(a.client_addr) || ' ', '') || coalesce(a.application_name, ''), a.backend_start
		FROM outbox_log_slots l
		LEFT JOIN pg_replication_slots s ON s.slot_name = l.slot_name AND s.database = current_database()
		LEFT JOIN pg_stat_activity a ON a.pid = s.active_pid
		ORDER BY l.slot_name`)
	if err != nil {
		return fmt.Errorf("reading the log mode's slots: %w", postgres.Classify(err))
	}
	rep.LogSlots, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (logSlot, error) {
		var s logSlot
		err := r.Scan(&s.Slot, &s.Exists, &s.Active, &s.WALStatus, &s.LagBytes, &s.HorizonAgeSeconds, &s.Recovering, &s.Reader, &s.ReaderSince)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("reading the log mode's slots: %w", postgres.Classify(err))
	}
	for _, s := range rep.LogSlots {
		switch {
		case !s.Exists || s.WALStatus == "lost":
			rep.Problems = append(rep.Problems, fmt.Sprintf("log slot %s is missing or lost: the next reader republishes the rows not known to be published and creates it (or delete its outbox_log_slots row if the log mode is gone: it stops retention)", s.Slot))
		case !s.Active:
			rep.Problems = append(rep.Problems, fmt.Sprintf("log slot %s has no reader: it retains %d bytes of WAL and grows (a publisher in outbox.mode log reads it)", s.Slot, s.LagBytes))
		}
	}
	return nil
}

// printLogSlots prints the log-mode slots (nothing when there are none).
func printLogSlots(w io.Writer, slots []logSlot) {
	if len(slots) == 0 {
		return
	}
	fmt.Fprintln(w, "LOG SLOTS")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SLOT\tSTATE\tWAL RETAINED\tHORIZON AGE\tREADER")
	for _, s := range slots {
		fmt.Fprintf(tw, "  %s\t%s\t%d bytes\t%s\t%s\n", s.Slot, s.State(), s.LagBytes, s.HorizonAge(), s.ReaderText())
	}
	tw.Flush()
}

// State is the slot's state: missing, lost, recovering, active or
// inactive (no reader).
func (s logSlot) State() string {
	switch {
	case !s.Exists:
		return "missing"
	case s.WALStatus == "lost":
		return "lost"
	case s.Recovering:
		return "recovering"
	case s.Active:
		return "active"
	}
	return "inactive"
}

// HorizonAge is how long ago the published horizon moved.
func (s logSlot) HorizonAge() time.Duration {
	return (time.Duration(s.HorizonAgeSeconds * float64(time.Second))).Round(time.Second)
}

// ReaderText is the reader's walsender and since when ("none").
func (s logSlot) ReaderText() string {
	if !s.Active {
		return "none"
	}
	if s.ReaderSince == nil {
		return s.Reader
	}
	return s.Reader + " since " + s.ReaderSince.UTC().Format(time.RFC3339)
}
