package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// logStream is the log mode's stream alone: pg_recvlogical reads the
// bench's slot through the relay's publication (pgoutput, protocol 1,
// binary columns, as the relay asks) and confirms what it read every
// second, as the relay confirms its watermark (Log.ConfirmInterval), with
// no publisher and no Pub/Sub: what reading the log costs the database by
// itself, the log mode's "relay SQL only".
type logStream struct {
	cmd  *exec.Cmd
	done chan error
}

// startLogStream creates the slot (and the publication, when no log-mode
// publisher created it yet) and starts pg_recvlogical on it, its output
// discarded, its log in logDir.
func (d *DB) startLogStream(ctx context.Context, logDir string) (*logStream, error) {
	bin, err := pgRecvLogical()
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_publication WHERE pubname = $1)`, d.logSlot()).Scan(&exists); err != nil {
		return nil, fmt.Errorf("reading publication %s: %w", d.logSlot(), err)
	}
	if !exists {
		sql := fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update')`,
			pgx.Identifier{d.logSlot()}.Sanitize(), pgx.Identifier{Schema, "outbox_events"}.Sanitize())
		if _, err := d.Pool.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("creating publication %s: %w", d.logSlot(), err)
		}
	}
	if _, err := d.Pool.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, d.logSlot()); err != nil {
		return nil, fmt.Errorf("creating slot %s: %w", d.logSlot(), err)
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(logDir, "pg_recvlogical.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--dbname", d.URL, "--slot", d.logSlot(), "--start", "--file", os.DevNull,
		"--option", "proto_version=1", "--option", "publication_names="+d.logSlot(), "--option", "binary=true",
		"--status-interval", "1", "--fsync-interval", "0", "--no-loop")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s := &logStream{cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); logf.Close() }()
	for {
		n, err := d.count(ctx, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, d.logSlot())
		if err != nil {
			s.stop()
			return nil, err
		}
		if n > 0 {
			return s, nil
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("pg_recvlogical exited before streaming slot %s: %v (log %s)", d.logSlot(), err, logf.Name())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *logStream) pid() int { return s.cmd.Process.Pid }

// stop ends pg_recvlogical (SIGINT: it confirms and exits).
func (s *logStream) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// waitConfirmed waits until the slot is confirmed past everything written
// so far (the stream read the step's transactions), at most timeout.
func (d *DB) waitConfirmed(ctx context.Context, timeout time.Duration) error {
	var end string
	if err := d.Pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&end); err != nil {
		return fmt.Errorf("reading the WAL's end: %w", err)
	}
	return d.waitRow(ctx, nil, timeout, "confirmed up to "+end,
		`SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND confirmed_flush_lsn >= $2::pg_lsn`, d.logSlot(), end)
}

// pgRecvLogical finds pg_recvlogical: PG_BINDIR, pg_config's bindir, the
// newest /usr/lib/postgresql/*/bin (as scripts/pg.sh looks), then PATH.
func pgRecvLogical() (string, error) {
	var dirs []string
	if d := os.Getenv("PG_BINDIR"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(m) > 0 {
		for i := len(m) - 1; i >= 0; i-- {
			dirs = append(dirs, m[i])
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "pg_recvlogical")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("pg_recvlogical"); err == nil {
		return p, nil
	}
	return "", errors.New("pg_recvlogical not found (PostgreSQL's client binaries; set PG_BINDIR)")
}
