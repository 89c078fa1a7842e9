// Package elastictest is eventrelay's Elasticsearch test server, part of
// the public test kit: a single-node, in-memory imitation of the
// Elasticsearch 8 REST API covering what package elastic relies on, with
// fault injection. A service's tests run its search projection (package
// elastic), its queries and its relayctl reindex and verify against it,
// through the official client (github.com/elastic/go-elasticsearch/v8) and
// real HTTP, without an Elasticsearch cluster. Package elastic's contract
// suite holds this server to Elasticsearch's documented behaviour, and runs
// against a real cluster too when ELASTIC_URL is set.
//
// # Use
//
// In tests: srv := elastictest.New(elastictest.Options{GCDeletes: 50 * time.Millisecond});
// defer srv.Close(); point the client at srv.URL. As a process:
// e2e/cmd/es-testserver -addr 127.0.0.1:9200 (see its -h). NewHandler returns the
// bare http.Handler (without connection-level outages).
//
// # Semantics implemented (as Elasticsearch 8.x answers them)
//
// Every answer carries "X-Elastic-Product: Elasticsearch", which the v8
// client checks. Error bodies have the real shape
// {"error":{"root_cause":[...],"type":...,"reason":...},"status":N}.
//
//   - GET / (cluster info, version.number 8.x), GET _cluster/health.
//   - PUT <index> with settings, mappings and aliases; HEAD/GET <index>
//     (also _mapping, _settings); DELETE <index> (concrete names only:
//     an alias or wildcard is refused, as with action.destructive_requires_name).
//     Index names are validated. Writing to a missing index auto-creates it
//     with dynamic mapping, unless require_alias=true.
//   - POST _aliases (add, remove, remove_index; atomic), GET/HEAD
//     _alias/<name>, <index>/_alias[/<name>], PUT/DELETE <index>/_alias/<name>.
//     A write through an alias needs a single index or an is_write_index.
//   - POST [<index>]/_bulk (NDJSON: index, create, delete; update answers a
//     per-item error), PUT/POST <index>/_doc/<id>, <index>/_create/<id>,
//     DELETE <index>/_doc/<id>, GET/HEAD <index>/_doc/<id> (real time).
//   - Versioning: internal (version+1), external / external_gt (new version
//     must be greater than the stored one), external_gte, if_seq_no +
//     if_primary_term; otherwise 409 version_conflict_engine_exception. An
//     internal version with an explicit version is refused (400), as is
//     create with an external version. A delete leaves a tombstone holding
//     its version (also for a missing document: 404 "not_found", version
//     recorded); the tombstone is forgotten after index.gc_deletes (setting,
//     or Options.GCDeletes, default 60s). After that a stale external
//     write succeeds again: the resurrection eventrelay avoids by never
//     deleting (see package elastic).
//   - Mapping checks: long/integer/short/byte/unsigned_long, float types,
//     boolean, date (strict_date_optional_time or epoch_millis; a custom
//     format accepts any string), ip; a concrete value where an object is
//     mapped; "dynamic": "strict" rejects new fields. A failing item is
//     answered 400 document_parsing_exception (mapper_parsing_exception when
//     Options.Version is below 8.8) with a caused_by, like Elasticsearch.
//     Otherwise new fields are added by dynamic mapping.
//   - Search: POST/GET [<index>]/_search and _count with match_all,
//     match_none, ids, term, terms, match, range, exists, constant_score
//     and bool; size/from (from+size <= 10000), sort on mapped fields,
//     _doc, _shard_doc and _score, search_after, version,
//     seq_no_primary_term, _source:false, track_total_hits, and scroll
//     (?scroll=1m, POST/DELETE _search/scroll). Sorting on _id is refused as
//     Elasticsearch 8 refuses it (fielddata on _id is disabled): use scroll
//     or sort on a keyword field. Searches see the state as of the last
//     refresh: POST <index>/_refresh, ?refresh=true on writes, or
//     automatically once index.refresh_interval (Options.RefreshInterval,
//     default 1s) has passed. Scores are not computed (every hit scores 1).
//
// # Fault injection
//
// In process (methods of Server and Handler) and over HTTP at /_estest/
// (on the server's own address, bypassing faults; the standalone binary can
// also serve them on a separate -control-addr that stays up during an
// outage):
//
//	Inject(status, d)            POST /_estest/fault {"status":429,"seconds":20}
//	                             every API request answers status with an
//	                             Elasticsearch-shaped error (429
//	                             es_rejected_execution_exception, 503
//	                             unavailable_shards_exception, 5xx ...)
//	Inject(0, 0)                 DELETE /_estest/fault
//	InjectItem(id, status, n)    POST /_estest/item-fault {"id":"v1","status":429,"times":1}
//	                             the next n writes of that document id fail
//	                             with status, the rest of the bulk succeeds
//	SetLatency(d)                POST /_estest/latency {"ms":200}
//	SetDown(true/false),         POST /_estest/down {"seconds":10}
//	DownFor(d)                   the listener is closed (connections are
//	                             refused) and open connections are closed;
//	                             after d the same address is listened on
//	                             again. Over HTTP the answer arrives first.
//	                             POST /_estest/up brings it back early (only
//	                             reachable through -control-addr).
//	Reset()                      POST /_estest/reset: drop all data, faults,
//	                             counters
//	Stats()                      GET /_estest/stats: request, bulk, conflict,
//	                             mapping-error and fault counters, current
//	                             fault, down flag, per-index docs,
//	                             tombstones and aliases
package elastictest
