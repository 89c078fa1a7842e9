package consistency

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Channel is the default NOTIFY channel of announcements.
const Channel = "eventrelay_applied"

// maxPayload keeps a payload under Postgres' 8,000-byte NOTIFY limit.
const maxPayload = 7900

// Execer runs a statement: a pgx.Tx, *pgx.Conn or *pgxpool.Pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Announcement is what one NOTIFY says: readModel holds each key at
// Versions[key] or newer. All is set when the keys did not fit: every
// waiter on the read model must look up again.
type Announcement struct {
	ReadModel string
	Versions  map[Key]int64
	All       bool
}

// Key is an aggregate.
type Key struct {
	AggregateType string
	AggregateID   string
}

// Announce sends one NOTIFY on channel (Channel when empty) saying
// readModel holds the tokens' aggregates at their versions or newer. Run
// in the apply transaction, it is delivered only when that commits. One
// notification per batch: each NOTIFY takes Postgres' notify lock at
// commit, so the projector never sends one per event.
func Announce(ctx context.Context, db Execer, channel, readModel string, applied []Token) error {
	if len(applied) == 0 {
		return nil
	}
	if channel == "" {
		channel = Channel
	}
	if _, err := db.Exec(ctx, "SELECT pg_notify($1, $2)", channel, encodeAnnouncement(readModel, applied)); err != nil {
		return fmt.Errorf("announcing %d applied events of %s: %w", len(applied), readModel, err)
	}
	return nil
}

// encodeAnnouncement is "<read model>\n" then "<version>|<type>|<id>\n"
// per key (its highest version), or "<read model>\n*" when that is too
// long.
func encodeAnnouncement(readModel string, applied []Token) string {
	top := make(map[Key]int64, len(applied))
	order := make([]Key, 0, len(applied))
	for _, t := range applied {
		k := Key{t.AggregateType, t.AggregateID}
		v, seen := top[k]
		if !seen {
			order = append(order, k)
		}
		if t.AggregateVersion > v {
			top[k] = t.AggregateVersion
		}
	}
	b := make([]byte, 0, maxPayload)
	b = append(append(b, readModel...), '\n')
	for _, k := range order {
		if strings.ContainsAny(k.AggregateType, "|\n") || strings.Contains(k.AggregateID, "\n") {
			return readModel + "\n*"
		}
		b = strconv.AppendInt(b, top[k], 10)
		b = append(append(append(append(append(b, '|'), k.AggregateType...), '|'), k.AggregateID...), '\n')
		if len(b) > maxPayload {
			return readModel + "\n*"
		}
	}
	return string(b)
}

// ParseAnnouncement reads a payload Announce sent. A payload it cannot
// read names at most a read model and sets All.
func ParseAnnouncement(payload string) Announcement {
	readModel, rest, _ := strings.Cut(payload, "\n")
	a := Announcement{ReadModel: readModel, Versions: map[Key]int64{}}
	if rest == "*" {
		a.All = true
		return a
	}
	for _, line := range strings.Split(rest, "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			a.All = true
			continue
		}
		v, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			a.All = true
			continue
		}
		a.Versions[Key{parts[1], parts[2]}] = v
	}
	return a
}
