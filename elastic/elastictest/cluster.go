package elastictest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

// cluster is the whole in-memory state: indices (with their aliases and
// documents) and open scrolls. One mutex guards everything.
type cluster struct {
	mu      sync.Mutex
	opts    Options
	indices map[string]*index
	scrolls map[string]*scroll
	order   int64
}

func newCluster(opts Options) *cluster {
	return &cluster{opts: opts, indices: map[string]*index{}, scrolls: map[string]*scroll{}}
}

func (c *cluster) now() time.Time { return c.opts.Clock() }

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// validIndexName applies Elasticsearch's index naming rules.
func validIndexName(name string) *esError {
	bad := func(why string) *esError {
		e := newErr(http.StatusBadRequest, "invalid_index_name_exception", "Invalid index name [%s], %s", name, why)
		e.Index = name
		return e
	}
	switch {
	case name == "" || name == "." || name == "..":
		return bad("must not be '.' or '..'")
	case strings.ToLower(name) != name:
		return bad("must be lowercase")
	case strings.ContainsAny(name, `\/*?"<>| ,#:`):
		return bad(`must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?]`)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return bad("must not start with '_', '-', or '+'")
	case len(name) > 255:
		return bad("index name is too long")
	}
	return nil
}

// aliasIndices returns the indices an alias points to, sorted by name.
func (c *cluster) aliasIndices(alias string) []*index {
	var out []*index
	for _, ix := range c.indices {
		if _, ok := ix.aliases[alias]; ok {
			out = append(out, ix)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (c *cluster) isAlias(name string) bool { return len(c.aliasIndices(name)) > 0 }

// resolveRead expands an index expression (names, aliases, comma lists,
// wildcards, _all) to concrete indices. A missing explicit name is an error;
// a wildcard matching nothing is not.
func (c *cluster) resolveRead(expr string) ([]*index, *esError) {
	seen := map[string]*index{}
	for _, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part == "_all" || strings.Contains(part, "*") {
			pattern := part
			if part == "_all" {
				pattern = "*"
			}
			for name, ix := range c.indices {
				if ok, _ := path.Match(pattern, name); ok {
					seen[name] = ix
				}
				for a := range ix.aliases {
					if ok, _ := path.Match(pattern, a); ok {
						seen[name] = ix
					}
				}
			}
			continue
		}
		if ix := c.indices[part]; ix != nil {
			seen[part] = ix
			continue
		}
		targets := c.aliasIndices(part)
		if len(targets) == 0 {
			return nil, indexNotFound(part)
		}
		for _, ix := range targets {
			seen[ix.name] = ix
		}
	}
	out := make([]*index, 0, len(seen))
	for _, ix := range seen {
		out = append(out, ix)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// resolveWrite finds the index a write to name goes to: the index itself,
// or the alias's write index. A missing name is auto-created (as with
// action.auto_create_index=true) unless requireAlias is set.
func (c *cluster) resolveWrite(name string, requireAlias bool) (*index, *esError) {
	if targets := c.aliasIndices(name); len(targets) > 0 {
		return writeIndexOf(name, targets)
	}
	if requireAlias {
		e := newErr(http.StatusNotFound, "index_not_found_exception",
			"no such index [%s] and [require_alias] request flag is [true] and [%s] is not an alias", name, name)
		e.Index = name
		return nil, e
	}
	if ix := c.indices[name]; ix != nil {
		return ix, nil
	}
	if err := c.createIndex(name, nil); err != nil {
		return nil, err
	}
	return c.indices[name], nil
}

func writeIndexOf(alias string, targets []*index) (*index, *esError) {
	var explicit *index
	for _, ix := range targets {
		if w := ix.aliases[alias].IsWriteIndex; w != nil && *w {
			explicit = ix
		}
	}
	if explicit != nil {
		return explicit, nil
	}
	if len(targets) == 1 {
		if w := targets[0].aliases[alias].IsWriteIndex; w == nil || *w {
			return targets[0], nil
		}
	}
	return nil, illegalArgument("no write index is defined for alias [%s]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index", alias)
}

// resolveSingle is for single-document reads: an alias must point to
// exactly one index.
func (c *cluster) resolveSingle(name string) (*index, *esError) {
	if ix := c.indices[name]; ix != nil {
		return ix, nil
	}
	targets := c.aliasIndices(name)
	switch len(targets) {
	case 0:
		return nil, indexNotFound(name)
	case 1:
		return targets[0], nil
	}
	names := make([]string, len(targets))
	for i, ix := range targets {
		names[i] = ix.name
	}
	return nil, illegalArgument("alias [%s] has more than one index associated with it [%s], can't execute a single index op", name, strings.Join(names, ", "))
}

// createIndex creates an index from a create-index body (settings,
// mappings, aliases); body may be nil.
func (c *cluster) createIndex(name string, body map[string]any) *esError {
	if err := validIndexName(name); err != nil {
		return err
	}
	if ix := c.indices[name]; ix != nil {
		e := newErr(http.StatusBadRequest, "resource_already_exists_exception", "index [%s/%s] already exists", name, ix.uuid)
		e.Index = name
		return e
	}
	if c.isAlias(name) {
		e := newErr(http.StatusBadRequest, "invalid_index_name_exception", "Invalid index name [%s], already exists as alias", name)
		e.Index = name
		return e
	}
	now := c.now()
	ix := &index{
		name: name, uuid: randomID(11), created: now,
		settings: map[string]string{"index.number_of_shards": "1", "index.number_of_replicas": "1"},
		mapping:  newMapping(), aliases: map[string]aliasMeta{},
		docs: map[string]*doc{}, tombs: map[string]tomb{}, visible: map[string]*doc{}, dirty: map[string]struct{}{},
		lastRefresh: now,
	}
	if s, ok := body["settings"].(map[string]any); ok {
		flattenSettings("", s, ix.settings)
	}
	for _, key := range []string{"index.gc_deletes", "index.refresh_interval"} {
		if v, ok := ix.settings[key]; ok {
			if _, err := parseTimeValue(v); err != nil {
				return illegalArgument("failed to parse setting [%s] with value [%s] as a time value: unit is missing or unrecognized", key, v)
			}
		}
	}
	if m, ok := body["mappings"].(map[string]any); ok {
		mp, err := parseMapping(m)
		if err != nil {
			return err
		}
		ix.mapping = mp
	}
	if a, ok := body["aliases"].(map[string]any); ok {
		for alias, def := range a {
			if c.indices[alias] != nil || alias == name {
				return newErr(http.StatusBadRequest, "invalid_alias_name_exception",
					"Invalid alias name [%s]: an index or data stream exists with the same name as the alias", alias)
			}
			ix.aliases[alias] = aliasMetaOf(def)
		}
	}
	ix.settings["index.uuid"] = ix.uuid
	ix.settings["index.provided_name"] = name
	ix.settings["index.creation_date"] = fmt.Sprint(now.UnixMilli())
	c.indices[name] = ix
	return nil
}

func aliasMetaOf(def any) aliasMeta {
	var m aliasMeta
	if d, ok := def.(map[string]any); ok {
		if w, ok := d["is_write_index"].(bool); ok {
			m.IsWriteIndex = &w
		}
	}
	return m
}

// flattenSettings turns {"index": {"gc_deletes": "1s"}} and
// {"gc_deletes": "1s"} alike into {"index.gc_deletes": "1s"}.
func flattenSettings(prefix string, in map[string]any, out map[string]string) {
	for k, v := range in {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if m, ok := v.(map[string]any); ok {
			flattenSettings(key, m, out)
			continue
		}
		if !strings.HasPrefix(key, "index.") {
			key = "index." + key
		}
		out[key] = stringOf(v)
	}
}

// nestSettings renders flat settings the way GET <index>/_settings does.
func nestSettings(flat map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range flat {
		parts := strings.Split(k, ".")
		cur := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = v
	}
	return out
}

func globMatch(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}
