package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Progress prints one refreshing status line (a plain line every few
// seconds when out is not a terminal): produced, published, projected per
// consumer, outbox lag and oldest age, failed rows, dead-lettered messages
// and the achieved write rate.
type Progress struct {
	Out      io.Writer
	Stats    *Stats
	Scraper  *Scraper
	Workload *Workload // optional

	mu       sync.Mutex
	tty      bool
	last     Snapshot
	lastLine string
	start    time.Time
}

// NewProgress returns a progress printer; it detects whether out is a
// terminal.
func NewProgress(out io.Writer, stats *Stats, scraper *Scraper, w *Workload) *Progress {
	p := &Progress{Out: out, Stats: stats, Scraper: scraper, Workload: w, start: time.Now()}
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// Run refreshes until ctx ends, then ends the line.
func (p *Progress) Run(ctx context.Context) {
	every := 500 * time.Millisecond
	if !p.tty {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p.Print(ctx)
		select {
		case <-ctx.Done():
			p.Finish()
			return
		case <-t.C:
		}
	}
}

// Print reads a snapshot and prints the line.
func (p *Progress) Print(ctx context.Context) {
	snap, err := p.Stats.Snapshot(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string
	if err != nil {
		line = fmt.Sprintf("[%s] Postgres unreachable (%v)", p.elapsed(), shortErr(err))
	} else {
		p.last = snap
		line = p.format(snap)
	}
	p.lastLine = line
	if p.tty {
		fmt.Fprintf(p.Out, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.Out, line)
	}
}

// Finish ends the refreshing line.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.lastLine != "" {
		fmt.Fprintln(p.Out)
		p.lastLine = ""
	}
}

// Last is the most recent snapshot.
func (p *Progress) Last() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *Progress) elapsed() string {
	return time.Since(p.start).Truncate(time.Second).String()
}

func (p *Progress) format(s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] produced %d  published %d  projected", p.elapsed(), s.Outbox.Produced, s.Outbox.Published)
	names := make([]string, 0, len(s.Applied))
	for c := range s.Applied {
		names = append(names, c)
	}
	sort.Strings(names)
	if len(names) == 0 {
		b.WriteString(" 0")
	}
	for _, c := range names {
		fmt.Fprintf(&b, " %s=%d", shortConsumer(c), s.Applied[c])
	}
	fmt.Fprintf(&b, "  lag %d  oldest %.1fs  failed %d", s.Outbox.Lag, s.Outbox.OldestAgeSeconds, s.Outbox.Failed)
	if p.Scraper != nil {
		fmt.Fprintf(&b, "  dead-lettered %.0f", p.Scraper.SumWhere("projector", "projector_dead_lettered_total"))
	}
	if p.Workload != nil {
		el := p.Workload.Elapsed().Seconds()
		fmt.Fprintf(&b, "  writes %d (%.0f/s)", p.Workload.Stats.Acked.Load(), float64(p.Workload.Stats.Acked.Load())/max(el, 1))
		if r := p.Workload.Stats.Retries.Load(); r > 0 {
			fmt.Fprintf(&b, " retried %d", r)
		}
	}
	return b.String()
}

// shortConsumer names the reference domain's consumers by their store.
func shortConsumer(c string) string {
	switch c {
	case ConsumerPG:
		return "pg"
	case ConsumerES:
		return "es"
	}
	return c
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
