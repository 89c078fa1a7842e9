package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/projection"
)

// SwitchTTL is how long a switch's value is reused before it is read from
// catalog_settings again: every catalog process follows a change within
// it, and reads one row per switch and TTL, not per request.
const SwitchTTL = time.Second

// Switches are the read path switches: the configured value unless an
// operator set one in catalog_settings (SetSwitch), re-read every
// SwitchTTL. Each switch's value is exported as
// catalog_read_path_enabled{path}.
type Switches struct {
	data     *Data
	defaults map[string]bool
	log      *slog.Logger
	enabled  *prometheus.GaugeVec

	mu    sync.Mutex
	cache map[string]switchValue
}

type switchValue struct {
	on   bool
	read time.Time
}

// NewSwitches returns the switches with their configured values.
func NewSwitches(d *Data, configured map[string]bool) *Switches {
	s := &Switches{data: d, defaults: configured, log: d.log, cache: map[string]switchValue{},
		enabled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "catalog_read_path_enabled",
			Help: "1 when the read path is switched on (config, or the operator's runtime setting).",
		}, []string{"path"})}
	for name, on := range configured {
		s.enabled.WithLabelValues(name).Set(b2f(on))
	}
	return s
}

// Collector exports catalog_read_path_enabled.
func (s *Switches) Collector() prometheus.Collector { return s.enabled }

// On reports whether the switch path is on. When catalog_settings cannot be
// read, the last value read (else the configured one) holds.
func (s *Switches) On(ctx context.Context, path string) bool {
	s.mu.Lock()
	c, ok := s.cache[path]
	s.mu.Unlock()
	if ok && time.Since(c.read) < SwitchTTL {
		return c.on
	}
	on, err := s.read(ctx, path)
	if err != nil {
		s.log.Warn("reading a read path switch failed; keeping its last value", "switch", path, "error", err.Error())
		if ok {
			return c.on
		}
		return s.defaults[path]
	}
	s.mu.Lock()
	s.cache[path] = switchValue{on: on, read: time.Now()}
	s.mu.Unlock()
	s.enabled.WithLabelValues(path).Set(b2f(on))
	return on
}

func (s *Switches) read(ctx context.Context, path string) (bool, error) {
	v, err := catalogdb.New(s.data.pool).GetSetting(ctx, path)
	if errors.Is(err, pgx.ErrNoRows) {
		return s.defaults[path], nil
	}
	if err != nil {
		return false, projection.PostgresError(err)
	}
	return strconv.ParseBool(v)
}

// SetSwitch sets the switch path on every catalog process (within
// SwitchTTL) and records who did it and why in admin_audit (command
// "settings set"), in one transaction.
func SetSwitch(ctx context.Context, d *Data, path string, on bool, requestedBy, reason string) (auditID int64, err error) {
	if requestedBy == "" || reason == "" {
		return 0, errors.New("setting a switch needs who asks (requested by) and why (reason)")
	}
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		q := catalogdb.New(tx)
		previous, err := q.GetSetting(ctx, path)
		if errors.Is(err, pgx.ErrNoRows) {
			previous = "(configured)"
		} else if err != nil {
			return fmt.Errorf("reading %s: %w", path, projection.PostgresError(err))
		}
		if err := q.SetSetting(ctx, catalogdb.SetSettingParams{Name: path, Value: strconv.FormatBool(on), UpdatedBy: requestedBy}); err != nil {
			return fmt.Errorf("setting %s: %w", path, projection.PostgresError(err))
		}
		details, _ := json.Marshal(map[string]string{"name": path, "value": strconv.FormatBool(on), "previous": previous, "outcome": "ok"})
		if err := tx.QueryRow(ctx, `INSERT INTO admin_audit (command, requested_by, reason, details) VALUES ('settings set', $1, $2, $3) RETURNING id`,
			requestedBy, reason, details).Scan(&auditID); err != nil {
			return fmt.Errorf("recording the audit row: %w", projection.PostgresError(err))
		}
		return nil
	})
	return auditID, err
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
