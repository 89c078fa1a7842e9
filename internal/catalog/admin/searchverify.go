package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/internal/catalog/catalogdb"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

type videoState struct {
	version int64
	deleted bool
	seen    bool
}

// verifySearch compares the index behind the alias with catalog.videos by
// version and tombstone flag (the document's "deleted" field).
func verifySearch(ctx context.Context, q *catalogdb.Queries, es searchSettings, samples int) (hook.Store, error) {
	rep := hook.Store{Name: "elasticsearch alias " + es.alias, Drift: []hook.Drift{}}
	if es.cfg.URL == "" {
		rep.Note = "no ELASTIC_URL / --elastic-url: the search index was not compared"
		return rep, nil
	}
	client, err := es.client(ctx)
	if err != nil {
		return rep, err
	}
	defer client.Close()
	videos, err := loadVideoStates(ctx, q)
	if err != nil {
		return rep, err
	}
	rep.Checked = true
	tally := hook.NewTally(samples)
	add := tally.Add
	err = client.Refresh(ctx, es.alias)
	if indexMissing(err) {
		// No index behind the alias: every video is missing from search.
		for id, v := range videos {
			kind := "missing"
			if v.deleted {
				kind = "missing_tombstone"
			}
			add(kind, id.String(), v.version, 0)
		}
		rep.Note = "the alias does not exist (relayctl rebuild --reindex)"
		rep.Drift = tally.Drift()
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("refreshing %s: %w", es.alias, err)
	}
	err = client.Scan(ctx, es.alias, func(id string, version int64, source []byte) error {
		var doc map[string]any
		if err := json.Unmarshal(source, &doc); err != nil {
			return fmt.Errorf("document %s: source is not a JSON object: %w", id, err)
		}
		deleted, _ := doc[elastic.FieldDeleted].(bool)
		rep.Rows++
		if deleted {
			rep.Tombstones++
		}
		u, perr := uuid.Parse(id)
		v, ok := videos[u]
		if perr != nil || !ok {
			add("extra", id, 0, version)
			return nil
		}
		v.seen = true
		switch {
		case version < v.version:
			add("stale", id, v.version, version)
		case version > v.version:
			add("ahead", id, v.version, version)
		case v.deleted && !deleted:
			add("resurrected", id, v.version, version)
		case !v.deleted && deleted:
			add("deleted_in_projection", id, v.version, version)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("scanning Elasticsearch alias %s: %w", es.alias, err)
	}
	for id, v := range videos {
		if !v.seen {
			kind := "missing"
			if v.deleted {
				kind = "missing_tombstone"
			}
			add(kind, id.String(), v.version, 0)
		}
	}
	rep.Drift = tally.Drift()
	return rep, nil
}

// indexMissing reports Elasticsearch's 404 index_not_found_exception.
func indexMissing(err error) bool {
	var re *elastic.ResponseError
	return errors.As(err, &re) && re.Status == http.StatusNotFound && re.Type == "index_not_found_exception"
}

// loadVideoStates reads (version, deleted) of every video, page by page.
func loadVideoStates(ctx context.Context, q *catalogdb.Queries) (map[uuid.UUID]*videoState, error) {
	out := map[uuid.UUID]*videoState{}
	var after uuid.UUID
	for {
		rows, err := q.VideoVersions(ctx, catalogdb.VideoVersionsParams{AfterID: after, PageSize: 5000})
		if err != nil {
			return nil, fmt.Errorf("reading video versions: %w", postgres.Classify(err))
		}
		for _, r := range rows {
			out[r.ID] = &videoState{version: r.Version, deleted: r.Deleted}
			after = r.ID
		}
		if len(rows) < 5000 {
			return out, nil
		}
	}
}
