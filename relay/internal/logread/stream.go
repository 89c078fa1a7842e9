package logread

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// Item is one thing the stream read: a transaction's begin, an outbox
// event of the open transaction (inserted, or updated to mean Change),
// its commit, or a keepalive.
type Item struct {
	Kind Kind
	// Begin: the commit time of the transaction.
	Commit time.Time
	// Insert, Update: the event.
	Event claim.Event
	// Update: what it means, and whether the event must be read from the
	// table (a column was not in the message).
	Change Change
	Stale  bool
	// Commit: the end of the transaction. Keepalive: a position the server
	// sent everything before.
	LSN pglogrepl.LSN
	// Keepalive: the server asks for a status update now.
	ReplyRequested bool
}

// Kind says what an Item is.
type Kind int

// The kinds of Item; None when the read timed out with nothing.
const (
	None Kind = iota
	Begin
	Insert
	Update
	Commit
	Keepalive
)

// Stream is one replication connection streaming a slot's changes.
type Stream struct {
	conn *pgconn.PgConn
	dec  *decoder
	Slot string
}

// slotName is what the relay accepts as a slot or publication name:
// Postgres' rule for slots (lower-case letters, digits, underscores).
var slotName = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

// ValidName reports whether name can be a slot or publication name.
func ValidName(name string) bool { return slotName.MatchString(name) }

// Dial opens a replication connection (replication=database) with cfg's
// address and credentials. The role needs the REPLICATION attribute.
func Dial(ctx context.Context, cfg *pgconn.Config, schema, slot string) (*Stream, error) {
	c := cfg.Copy()
	c.RuntimeParams = map[string]string{"replication": "database", "application_name": "eventrelay-log-" + slot,
		// The slot is released within about 11s of the reader's host
		// vanishing (wal_sender_timeout, 60s by default, also ends it).
		"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3"}
	conn, err := pgconn.ConnectConfig(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("opening a replication connection: %w", err)
	}
	return &Stream{conn: conn, dec: newDecoder(schema), Slot: slot}, nil
}

// Close closes the connection (the slot becomes inactive).
func (s *Stream) Close() { _ = s.conn.Close(context.Background()) }

// Created is a slot just created, with the snapshot its position is
// consistent with: rows visible in it are before the slot's stream.
type Created struct {
	At       pglogrepl.LSN
	Snapshot string // valid until the next command on the stream
}

// Create creates the slot (pgoutput) and exports its snapshot.
func (s *Stream) Create(ctx context.Context) (Created, error) {
	res, err := pglogrepl.CreateReplicationSlot(ctx, s.conn, s.Slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return Created{}, fmt.Errorf("creating replication slot %s: %w", s.Slot, err)
	}
	at, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return Created{}, fmt.Errorf("creating replication slot %s: %w", s.Slot, err)
	}
	return Created{At: at, Snapshot: res.SnapshotName}, nil
}

// Start streams the slot from its confirmed position, the changes of
// publication's tables (protocol 1: committed transactions only, so a
// rolled-back insert is never read), their columns in binary (PostgreSQL
// 14 and later): the server copies the payload's bytes rather than
// writing them as hex, and formats no timestamp or uuid for the relay to
// parse back.
func (s *Stream) Start(ctx context.Context, publication string) error {
	err := pglogrepl.StartReplication(ctx, s.conn, s.Slot, 0, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names '" + publication + "'", "binary 'true'"},
	})
	if err != nil {
		return fmt.Errorf("starting replication from slot %s: %w", s.Slot, err)
	}
	return nil
}

// Confirm tells the server every change below at is done: the slot keeps
// WAL from there on.
func (s *Stream) Confirm(ctx context.Context, at pglogrepl.LSN) error {
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: at}); err != nil {
		return fmt.Errorf("confirming slot %s up to %s: %w", s.Slot, at, err)
	}
	return nil
}

// Next reads the next item, waiting at most wait (None when nothing came).
func (s *Stream) Next(ctx context.Context, wait time.Duration) (Item, error) {
	for {
		rctx, cancel := context.WithTimeout(ctx, wait)
		msg, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
				return Item{}, nil
			}
			return Item{}, fmt.Errorf("reading slot %s: %w", s.Slot, err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			return Item{}, fmt.Errorf("reading slot %s: %w", s.Slot, pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyData:
			it, skip, err := s.item(m.Data)
			if err != nil || !skip {
				return it, err
			}
		default:
			return Item{}, fmt.Errorf("reading slot %s: unexpected message %T", s.Slot, msg)
		}
	}
}

// item decodes one CopyData; skip is true for what the relay ignores
// (other tables, types, origins, truncates).
func (s *Stream) item(data []byte) (Item, bool, error) {
	if len(data) == 0 {
		return Item{}, true, nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return Item{}, false, fmt.Errorf("reading slot %s: %w", s.Slot, err)
		}
		return Item{Kind: Keepalive, LSN: k.ServerWALEnd, ReplyRequested: k.ReplyRequested}, false, nil
	case pglogrepl.XLogDataByteID:
	default:
		return Item{}, true, nil
	}
	x, err := pglogrepl.ParseXLogData(data[1:])
	if err != nil {
		return Item{}, false, fmt.Errorf("reading slot %s: %w", s.Slot, err)
	}
	msg, err := pglogrepl.Parse(x.WALData)
	if err != nil {
		return Item{}, false, fmt.Errorf("decoding slot %s at %s: %w", s.Slot, x.WALStart, err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		s.dec.relation(m)
	case *pglogrepl.BeginMessage:
		return Item{Kind: Begin, Commit: m.CommitTime}, false, nil
	case *pglogrepl.CommitMessage:
		return Item{Kind: Commit, LSN: m.TransactionEndLSN}, false, nil
	case *pglogrepl.InsertMessage:
		e, ok, err := s.dec.insert(m)
		if err != nil {
			return Item{}, false, fmt.Errorf("decoding slot %s at %s: %w", s.Slot, x.WALStart, err)
		}
		if ok {
			return Item{Kind: Insert, Event: e}, false, nil
		}
	case *pglogrepl.UpdateMessage:
		e, c, stale, err := s.dec.update(m)
		if err != nil {
			return Item{}, false, fmt.Errorf("decoding slot %s at %s: %w", s.Slot, x.WALStart, err)
		}
		if c != Unchanged {
			return Item{Kind: Update, Event: e, Change: c, Stale: stale}, false, nil
		}
	}
	return Item{}, true, nil
}

// ErrSlotInUse is returned (wrapped) when another connection streams the
// slot: this relay is a standby.
var ErrSlotInUse = errors.New("replication slot is in use")

// InUse reports whether err is Postgres refusing a slot another process
// streams (SQLSTATE 55006, object in use).
func InUse(err error) bool {
	var pg *pgconn.PgError
	return errors.Is(err, ErrSlotInUse) || (errors.As(err, &pg) && pg.Code == "55006")
}
