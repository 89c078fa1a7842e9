package elastictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// doc is the live state of one document.
type doc struct {
	id      string
	source  json.RawMessage
	parsed  map[string]any
	version int64
	seqNo   int64
	order   int64 // cluster-wide write order: the "_doc" sort
}

// tomb is the version a delete leaves behind. Elasticsearch keeps it for
// index.gc_deletes and then forgets it; after that a stale external-version
// write is accepted again (the resurrection this package lets tests show).
type tomb struct {
	version, seqNo int64
	at             time.Time
}

type aliasMeta struct {
	IsWriteIndex *bool `json:"is_write_index,omitempty"`
}

// index is one concrete index. Writes go to docs; searches read visible,
// which catches up on refresh (explicit, ?refresh=true, or when the refresh
// interval has passed at the next search), as in Elasticsearch. GET by id is
// real time and reads docs.
type index struct {
	name, uuid  string
	created     time.Time
	settings    map[string]string // flat, "index." prefixed
	mapping     *mapping
	aliases     map[string]aliasMeta
	docs        map[string]*doc
	tombs       map[string]tomb
	visible     map[string]*doc
	dirty       map[string]struct{}
	lastRefresh time.Time
	seqNo       int64
}

func (ix *index) duration(key string, def time.Duration) time.Duration {
	if s, ok := ix.settings[key]; ok {
		if d, err := parseTimeValue(s); err == nil {
			return d
		}
	}
	return def
}

// current returns the version a write must beat: the document's, or a
// tombstone's while it is younger than gc_deletes.
func (ix *index) current(id string, now time.Time, gc time.Duration) (d *doc, version int64, exists bool) {
	if d := ix.docs[id]; d != nil {
		return d, d.version, true
	}
	if t, ok := ix.tombs[id]; ok {
		if now.Sub(t.at) < gc {
			return nil, t.version, true
		}
		delete(ix.tombs, id)
	}
	return nil, 0, false
}

func (ix *index) refresh(now time.Time) {
	for id := range ix.dirty {
		if d := ix.docs[id]; d != nil {
			ix.visible[id] = d
		} else {
			delete(ix.visible, id)
		}
	}
	clear(ix.dirty)
	ix.lastRefresh = now
}

func (ix *index) maybeRefresh(now time.Time, def time.Duration) {
	if iv := ix.duration("index.refresh_interval", def); iv >= 0 && now.Sub(ix.lastRefresh) >= iv {
		ix.refresh(now)
	}
}

// writeOp is one index, create or delete operation.
type writeOp struct {
	action      string // "index", "create" or "delete"
	id          string
	source      json.RawMessage
	parsed      map[string]any
	version     *int64
	versionType string // "", "internal", "external", "external_gt", "external_gte"
	ifSeqNo     *int64
	ifPrimary   *int64
}

type writeResult struct {
	status  int
	result  string
	version int64
	seqNo   int64
	err     *esError
}

func (ix *index) conflict(id, format string, args ...any) writeResult {
	e := newErr(http.StatusConflict, "version_conflict_engine_exception", "["+id+"]: version conflict, "+format, args...)
	e.Index = ix.name
	e.Extra = map[string]any{"shard": "0", "index_uuid": ix.uuid}
	return writeResult{status: http.StatusConflict, err: e}
}

// apply runs op against the index with Elasticsearch's versioning rules.
// The caller has validated the op and checked the source against the mapping.
func (ix *index) apply(op writeOp, now time.Time, gc time.Duration, order int64) writeResult {
	d, cur, exists := ix.current(op.id, now, gc)
	external := strings.HasPrefix(op.versionType, "external")
	switch {
	case op.action == "create" && d != nil:
		return ix.conflict(op.id, "document already exists (current version [%d])", cur)
	case op.ifSeqNo != nil:
		if d == nil {
			return ix.conflict(op.id, "required seqNo [%d], primary term [%d] but no document was found", *op.ifSeqNo, *op.ifPrimary)
		}
		if d.seqNo != *op.ifSeqNo || *op.ifPrimary != 1 {
			return ix.conflict(op.id, "required seqNo [%d], primary term [%d]. current document has seqNo [%d] and primary term [1]", *op.ifSeqNo, *op.ifPrimary, d.seqNo)
		}
	case external && exists && op.versionType == "external_gte" && *op.version < cur:
		return ix.conflict(op.id, "current version [%d] is higher than the one provided [%d]", cur, *op.version)
	case external && exists && op.versionType != "external_gte" && *op.version <= cur:
		return ix.conflict(op.id, "current version [%d] is higher or equal to the one provided [%d]", cur, *op.version)
	}
	next := cur + 1
	if external {
		next = *op.version
	}
	ix.seqNo++
	ix.dirty[op.id] = struct{}{}
	if op.action == "delete" {
		ix.tombs[op.id] = tomb{version: next, seqNo: ix.seqNo, at: now}
		if d == nil {
			return writeResult{status: http.StatusNotFound, result: "not_found", version: next, seqNo: ix.seqNo}
		}
		delete(ix.docs, op.id)
		return writeResult{status: http.StatusOK, result: "deleted", version: next, seqNo: ix.seqNo}
	}
	delete(ix.tombs, op.id)
	ix.docs[op.id] = &doc{id: op.id, source: op.source, parsed: op.parsed, version: next, seqNo: ix.seqNo, order: order}
	if d == nil {
		return writeResult{status: http.StatusCreated, result: "created", version: next, seqNo: ix.seqNo}
	}
	return writeResult{status: http.StatusOK, result: "updated", version: next, seqNo: ix.seqNo}
}

// parseTimeValue parses Elasticsearch time values: "-1", "500ms", "60s",
// "1m", "2h", "1d", "10nanos", "10micros". A unit is required.
func parseTimeValue(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "-1" {
		return -1, nil
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{
		{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond},
		{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour},
	}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil || f < 0 {
				break
			}
			return time.Duration(f * float64(u.d)), nil
		}
	}
	return 0, fmt.Errorf("failed to parse [%s], unit is missing or unrecognized", s)
}
