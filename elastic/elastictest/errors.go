package elastictest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// esError is an Elasticsearch exception as it appears on the wire: a type,
// a reason and optionally a cause and index metadata.
type esError struct {
	Status   int
	Type     string
	Reason   string
	Index    string
	CausedBy *esError
	Extra    map[string]any
}

func (e *esError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Reason) }

func newErr(status int, typ, format string, args ...any) *esError {
	return &esError{Status: status, Type: typ, Reason: fmt.Sprintf(format, args...)}
}

// object renders the exception the way Elasticsearch does inside "error"
// (top level) or inside a bulk item.
func (e *esError) object() map[string]any {
	m := map[string]any{"type": e.Type, "reason": e.Reason}
	if e.Index != "" {
		m["index"] = e.Index
		m["index_uuid"] = "_na_"
	}
	for k, v := range e.Extra {
		m[k] = v
	}
	if e.CausedBy != nil {
		m["caused_by"] = e.CausedBy.object()
	}
	return m
}

func (e *esError) rootCause() map[string]any {
	m := map[string]any{"type": e.Type, "reason": e.Reason}
	if e.Index != "" {
		m["index"] = e.Index
		m["index_uuid"] = "_na_"
	}
	return m
}

func indexNotFound(name string) *esError {
	e := newErr(http.StatusNotFound, "index_not_found_exception", "no such index [%s]", name)
	e.Index = name
	e.Extra = map[string]any{"resource.type": "index_or_alias", "resource.id": name}
	return e
}

func illegalArgument(format string, args ...any) *esError {
	return newErr(http.StatusBadRequest, "illegal_argument_exception", format, args...)
}

func parsingError(format string, args ...any) *esError {
	return newErr(http.StatusBadRequest, "parsing_exception", format, args...)
}

// faultError is the body an injected fault answers with, shaped like what a
// real cluster sends for that status.
func faultError(status int) *esError {
	switch {
	case status == http.StatusTooManyRequests:
		return newErr(status, "es_rejected_execution_exception",
			"rejected execution of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=0, max_coordinating_and_primary_bytes=0] (estest: injected)")
	case status == http.StatusServiceUnavailable:
		return newErr(status, "unavailable_shards_exception", "primary shard is not active (estest: injected)")
	case status == http.StatusGatewayTimeout:
		return newErr(status, "timeout_exception", "request timed out (estest: injected)")
	case status >= 500:
		return newErr(status, "exception", "internal error (estest: injected)")
	case status == http.StatusUnauthorized:
		return newErr(status, "security_exception", "missing authentication credentials (estest: injected)")
	case status == http.StatusForbidden:
		return newErr(status, "security_exception", "action is unauthorized (estest: injected)")
	default:
		return newErr(status, "illegal_argument_exception", "injected failure (estest)")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func writeError(w http.ResponseWriter, e *esError) {
	writeJSON(w, e.Status, map[string]any{
		"error":  mergeRoot(e),
		"status": e.Status,
	})
}

func mergeRoot(e *esError) map[string]any {
	m := e.object()
	m["root_cause"] = []any{e.rootCause()}
	return m
}
