package command

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// rowFilter is the outbox row selection shared by `failed list` and
// `replay`. Its JSON form is what the replay audit row records.
type rowFilter struct {
	IDs    []string `json:"ids,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Cause is the reason of the row's last error (its last error_history
	// entry): the automatic re-drive selects by it.
	Cause         string `json:"cause,omitempty"`
	Topic         string `json:"topic,omitempty"`
	AggregateType string `json:"aggregate_type,omitempty"`
	AggregateID   string `json:"aggregate_id,omitempty"`
	Since         string `json:"since,omitempty"`
	Until         string `json:"until,omitempty"`
	Limit         int    `json:"limit,omitempty"`

	rowIDs   []int64
	eventIDs []uuid.UUID
	since    time.Time
	until    time.Time
	ids      string
}

func addRowFilterFlags(fs *flag.FlagSet, defLimit int) *rowFilter {
	f := &rowFilter{}
	fs.StringVar(&f.ids, "ids", "", "comma-separated outbox row ids and/or event ids (UUIDs)")
	addReasonFlag(fs, &f.Reason, "error_reason, e.g. payload_invalid, topic_not_found, max_attempts_exceeded")
	fs.StringVar(&f.Topic, "topic", "", "Pub/Sub topic id, e.g. orders.events")
	fs.StringVar(&f.AggregateType, "aggregate-type", "", "aggregate type, e.g. order")
	fs.StringVar(&f.AggregateID, "aggregate", "", "aggregate id")
	fs.StringVar(&f.Since, "since", "", "window start: RFC 3339 time or a duration ago (e.g. 2h); failed_at for failed rows, published_at for published (created_at for those the log mode published)")
	fs.StringVar(&f.Until, "until", "", "window end (exclusive): RFC 3339 time or a duration ago")
	fs.IntVar(&f.Limit, "limit", defLimit, "at most this many rows (0: no limit)")
	return f
}

// resolve validates the flags (usage errors name the flag).
func (f *rowFilter) resolve(now time.Time) error {
	for _, s := range strings.Split(f.ids, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		f.IDs = append(f.IDs, s)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			f.rowIDs = append(f.rowIDs, n)
			continue
		}
		u, err := uuid.Parse(s)
		if err != nil {
			return usageErr("--ids: %q is neither an outbox row id nor an event id (UUID)", s)
		}
		f.eventIDs = append(f.eventIDs, u)
	}
	var err error
	if f.since, err = parseWhen(f.Since, now); err != nil {
		return usageErr("--since: %v", err)
	}
	if f.until, err = parseWhen(f.Until, now); err != nil {
		return usageErr("--until: %v", err)
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.until.After(f.since) {
		return usageErr("--until must be after --since")
	}
	// The audit records the absolute window used, not "15m" ago of when.
	if !f.since.IsZero() {
		f.Since = f.since.UTC().Format(time.RFC3339Nano)
	}
	if !f.until.IsZero() {
		f.Until = f.until.UTC().Format(time.RFC3339Nano)
	}
	if f.Limit < 0 {
		return usageErr("--limit must be >= 0")
	}
	return nil
}

// empty reports whether no filter narrows the selection.
func (f *rowFilter) empty() bool {
	return len(f.IDs) == 0 && f.Reason == "" && f.Cause == "" && f.Topic == "" && f.AggregateType == "" &&
		f.AggregateID == "" && f.Since == "" && f.Until == ""
}

func (f *rowFilter) params(statuses []string, afterID int64, limit int) outboxdb.SelectOutboxRowsParams {
	return outboxdb.SelectOutboxRowsParams{
		Statuses:      statuses,
		AfterID:       afterID,
		RowIds:        nonNil(f.rowIDs),
		EventIds:      nonNil(f.eventIDs),
		Reason:        text(f.Reason),
		Cause:         text(f.Cause),
		Topic:         text(f.Topic),
		AggregateType: text(f.AggregateType),
		AggregateID:   text(f.AggregateID),
		Since:         timestamptz(f.since),
		Until:         timestamptz(f.until),
		RowLimit:      int32(limit),
	}
}

func (f *rowFilter) json() []byte {
	b, _ := json.Marshal(f)
	return b
}

// parseWhen accepts RFC 3339 times and durations ago ("90m", "2h").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2025-01-02T15:04:05Z) nor a duration ago (2h)", s)
}

func text(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

func timestamptz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
