package command

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

var consoleFuncs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "-"
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		case *time.Time:
			if v == nil {
				return "-"
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		}
		return fmt.Sprint(t)
	},
	"age": func(sec float64) string {
		return (time.Duration(sec * float64(time.Second))).Round(time.Millisecond).String()
	},
	"short": func(s string, n int) string { return oneLine(s, n) },
	"dash":  dash,
}

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return s
}

func prettyJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

// printable is b as text when it is valid UTF-8 without control
// characters, else base64.
func printable(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' }) {
		if json.Valid(b) {
			return prettyJSON(b)
		}
		return string(b)
	}
	return "base64: " + base64.StdEncoding.EncodeToString(b)
}

func urlEscape(s string) string { return url.QueryEscape(s) }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// passwordOf is the password in a Postgres URL or key=value connection
// string, "" when it has none.
func passwordOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			return p
		}
	}
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// sampler keeps the last hour of lag and throughput samples for the
// overview's charts.
type sampler struct {
	mu     sync.Mutex
	points []sample
}

type sample struct {
	at        time.Time
	lag       int64
	published int64
}

const sampleWindow = time.Hour

func (s *sampler) run(ctx context.Context, pool *pgxpool.Pool, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.take(ctx, pool)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sampler) take(ctx context.Context, pool *pgxpool.Pool) {
	q := outboxdb.New(pool)
	h, err := q.OutboxHealth(ctx, 300)
	if err != nil {
		return
	}
	counts, err := q.OutboxStatusCounts(ctx)
	if err != nil {
		return
	}
	var published int64
	for _, c := range counts {
		if c.Status == "published" {
			published = c.N
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.points = append(s.points, sample{at: now, lag: h.Lag, published: published})
	for len(s.points) > 0 && now.Sub(s.points[0].at) > sampleWindow {
		s.points = s.points[1:]
	}
}

// series is lag per sample and published rows per second between samples
// (a drop, retention deleting rows, counts as 0).
func (s *sampler) series() (lag, rate []float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.points {
		lag = append(lag, float64(p.lag))
		if i > 0 {
			dt := p.at.Sub(s.points[i-1].at).Seconds()
			d := float64(p.published - s.points[i-1].published)
			if d < 0 || dt <= 0 {
				d = 0
			} else {
				d /= dt
			}
			rate = append(rate, d)
		}
	}
	return lag, rate
}

// sparkline renders values as a small inline SVG.
func sparkline(v []float64, unit string) template.HTML {
	const w, h = 300.0, 60.0
	if len(v) < 2 {
		return template.HTML(fmt.Sprintf(`<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="collecting samples"><text x="4" y="34">collecting samples…</text></svg>`, w, h))
	}
	hi := 0.0
	for _, x := range v {
		hi = max(hi, x)
	}
	if hi == 0 {
		hi = 1
	}
	var pts strings.Builder
	for i, x := range v {
		fmt.Fprintf(&pts, "%.1f,%.1f ", float64(i)*w/float64(len(v)-1), h-4-x/hi*(h-12))
	}
	last := v[len(v)-1]
	return template.HTML(fmt.Sprintf(`<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s"><polyline points="%s"/><text x="4" y="12">max %.4g %s · now %.4g</text></svg>`,
		w, h, template.HTMLEscapeString(unit), pts.String(), hi, template.HTMLEscapeString(unit), last))
}
