package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// Verifier returns base (the service's verifier of its source and its
// Postgres read models) with the search index compared too (Store): its
// flags are base's (when base is a hook.Flagger) and Admin's. With a nil
// base the report counts the source from Versions, noun names one
// aggregate ("order").
func (a Admin) Verifier(base hook.Verifier, noun string) hook.Verifier {
	return verifier{base: base, admin: a, noun: noun}
}

type verifier struct {
	base  hook.Verifier
	admin Admin
	noun  string
}

func (v verifier) Flags() []hook.Flag {
	var out []hook.Flag
	if f, ok := v.base.(hook.Flagger); ok {
		out = append(out, f.Flags()...)
	}
	return append(out, v.admin.Flags()...)
}

func (v verifier) Verify(ctx context.Context, tx pgx.Tx, env hook.Env, samples int) (hook.Report, error) {
	rep := hook.Report{Noun: v.noun}
	if v.base != nil {
		r, err := v.base.Verify(ctx, tx, env, samples)
		if err != nil {
			return r, err
		}
		rep = r
	}
	store, src, err := v.admin.compare(ctx, tx, env, samples, v.base == nil)
	if err != nil {
		return rep, err
	}
	if v.base == nil {
		rep.Rows, rep.Deleted = src.rows, src.deleted
	}
	rep.Stores = append(rep.Stores, store)
	return rep, nil
}

// counts are the source's aggregates, of which deleted.
type counts struct{ rows, deleted int64 }

// aggregate is one aggregate of the source of truth, for Store.
type aggregate struct {
	version int64
	deleted bool
	seen    bool
}

// Store compares the index behind the alias with Versions by version and
// tombstone flag (the document's FieldDeleted). Drift kinds: missing,
// missing_tombstone, extra, stale, ahead, resurrected (deleted in the
// source, live in the index) and deleted_in_projection. Without a URL the
// store is not compared (Checked false, a Note); a missing alias is drift
// (every aggregate missing), an unreachable cluster an error.
func (a Admin) Store(ctx context.Context, tx pgx.Tx, env hook.Env, samples int) (hook.Store, error) {
	rep, _, err := a.compare(ctx, tx, env, samples, false)
	return rep, err
}

// compare is Store, also counting the source (which it reads without a URL
// only when count is set).
func (a Admin) compare(ctx context.Context, tx pgx.Tx, env hook.Env, samples int, count bool) (hook.Store, counts, error) {
	s := a.settings(env)
	rep := hook.Store{Name: "elasticsearch alias " + s.alias, Drift: []hook.Drift{}}
	var n counts
	const skipped = "no ELASTIC_URL / --elastic-url: the search index was not compared"
	if s.cfg.URL == "" && !count {
		rep.Note = skipped
		return rep, n, nil
	}
	if a.Versions == nil {
		return rep, n, errors.New("elastic: Admin.Versions is nil: this service cannot verify its search index")
	}
	source := map[string]*aggregate{}
	if err := a.Versions(ctx, tx, func(id string, version int64, deleted bool) error {
		source[id] = &aggregate{version: version, deleted: deleted}
		if n.rows++; deleted {
			n.deleted++
		}
		return nil
	}); err != nil {
		return rep, n, fmt.Errorf("reading the source's versions: %w", err)
	}
	if s.cfg.URL == "" {
		rep.Note = skipped
		return rep, n, nil
	}
	client, err := s.client(ctx)
	if err != nil {
		return rep, n, err
	}
	defer client.Close()
	rep.Checked = true
	tally := hook.NewTally(samples)
	missing := func() {
		for id, ag := range source {
			if !ag.seen {
				kind := "missing"
				if ag.deleted {
					kind = "missing_tombstone"
				}
				tally.Add(kind, id, ag.version, 0)
			}
		}
		rep.Drift = tally.Drift()
	}
	err = client.Refresh(ctx, s.alias)
	if IndexMissing(err) {
		rep.Note = "the alias does not exist (relayctl rebuild --reindex)"
		missing()
		return rep, n, nil
	}
	if err != nil {
		return rep, n, fmt.Errorf("refreshing %s: %w", s.alias, err)
	}
	err = client.Scan(ctx, s.alias, func(id string, version int64, src []byte) error {
		var doc map[string]any
		if err := json.Unmarshal(src, &doc); err != nil {
			return fmt.Errorf("document %s: source is not a JSON object: %w", id, err)
		}
		deleted, _ := doc[FieldDeleted].(bool)
		rep.Rows++
		if deleted {
			rep.Tombstones++
		}
		ag, ok := source[id]
		if !ok {
			tally.Add("extra", id, 0, version)
			return nil
		}
		ag.seen = true
		switch {
		case version < ag.version:
			tally.Add("stale", id, ag.version, version)
		case version > ag.version:
			tally.Add("ahead", id, ag.version, version)
		case ag.deleted && !deleted:
			tally.Add("resurrected", id, ag.version, version)
		case !ag.deleted && deleted:
			tally.Add("deleted_in_projection", id, ag.version, version)
		}
		return nil
	})
	if err != nil {
		return rep, n, fmt.Errorf("scanning Elasticsearch alias %s: %w", s.alias, err)
	}
	missing()
	return rep, n, nil
}

// IndexMissing reports whether err is Elasticsearch's 404
// index_not_found_exception: the index or alias does not exist.
func IndexMissing(err error) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Status == http.StatusNotFound && re.Type == "index_not_found_exception"
}

// settings are the Elasticsearch settings of one relayctl invocation.
type settings struct {
	cfg     Config
	alias   string
	timeout time.Duration
}

func (a Admin) settings(env hook.Env) settings {
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return settings{
		cfg:   Config{URL: env.Flags[FlagURL], Username: getenv("ELASTIC_USERNAME"), Password: getenv("ELASTIC_PASSWORD")},
		alias: env.Flags[FlagAlias], timeout: env.ConnectTimeout,
	}
}

// check validates the settings of a command that needs Elasticsearch.
func (s settings) check() error {
	if s.cfg.URL == "" {
		return hook.Usagef("Elasticsearch is required here: set --%s or ELASTIC_URL", FlagURL)
	}
	if err := s.cfg.Validate("elastic"); err != nil {
		return &hook.UsageError{Err: err}
	}
	if err := checkIndexName(s.alias); err != nil {
		return hook.Usagef("--%s: %v", FlagAlias, err)
	}
	return nil
}

// client opens the configured cluster and pings it within
// --connect-timeout, so an unreachable cluster is reported once, here.
func (s settings) client(ctx context.Context) (*Client, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	client, err := New(s.cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := client.Ping(pctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("Elasticsearch at %s (--connect-timeout %s): %w", RedactURL(s.cfg.URL), s.timeout, err)
	}
	return client, nil
}
