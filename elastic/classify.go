package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// ResponseError is an error answer from Elasticsearch: the HTTP status and
// the exception type and reason from the body. Adapter errors wrap it in an
// errclass.Error; use errors.As to read it.
type ResponseError struct {
	Status   int
	Type     string // e.g. "version_conflict_engine_exception"
	Reason   string
	CausedBy string // "type: reason" of the cause, if any
}

func (e *ResponseError) Error() string {
	s := fmt.Sprintf("elasticsearch %d", e.Status)
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.CausedBy != "" {
		s += " (caused by " + e.CausedBy + ")"
	}
	return s
}

// wireError is the "error" object of an answer or a bulk item.
type wireError struct {
	Type     string     `json:"type"`
	Reason   string     `json:"reason"`
	CausedBy *wireError `json:"caused_by"`
}

func (w *wireError) toResponse(status int) *ResponseError {
	e := &ResponseError{Status: status}
	if w != nil {
		e.Type, e.Reason = w.Type, w.Reason
		if w.CausedBy != nil {
			e.CausedBy = w.CausedBy.Type + ": " + w.CausedBy.Reason
		}
	}
	return e
}

// parseResponseError reads an error body, which is either
// {"error":{...},"status":N} or {"error":"text","status":N}.
func parseResponseError(status int, body []byte) *ResponseError {
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &envelope) == nil && len(envelope.Error) > 0 {
		var w wireError
		if json.Unmarshal(envelope.Error, &w) == nil {
			return w.toResponse(status)
		}
		var text string
		if json.Unmarshal(envelope.Error, &text) == nil {
			return &ResponseError{Status: status, Reason: text}
		}
	}
	reason := string(body)
	if len(reason) > 200 {
		reason = reason[:200] + "..."
	}
	if reason == "" {
		reason = http.StatusText(status)
	}
	return &ResponseError{Status: status, Reason: reason}
}

// reasonFor classifies an Elasticsearch error status, for whole requests
// and bulk items alike:
//
//	429                           -> rate_limited  (transient)
//	502, 503                      -> unavailable   (transient)
//	504                           -> timeout       (transient)
//	other 5xx                     -> server_error  (transient)
//	404 index_not_found_exception -> unavailable   (transient: the index or
//	                                 alias is missing; EnsureIndex restores it)
//	409 (whole request)           -> server_error  (transient: a concurrent change)
//	400                           -> mapping_error (the document or request
//	                                 does not fit the index: mapper/document
//	                                 parsing, illegal_argument, strict mapping)
//	401, 403                      -> permission_denied
//	413                           -> message_too_large
//	other 4xx                     -> payload_invalid
func reasonFor(status int, typ string) errclass.Reason {
	switch {
	case status == http.StatusTooManyRequests:
		return errclass.RateLimited
	case status == http.StatusBadGateway || status == http.StatusServiceUnavailable:
		return errclass.Unavailable
	case status == http.StatusGatewayTimeout:
		return errclass.Timeout
	case status >= 500:
		return errclass.ServerError
	case status == http.StatusNotFound && typ == "index_not_found_exception":
		return errclass.Unavailable
	case status == http.StatusConflict:
		return errclass.ServerError
	case status == http.StatusBadRequest:
		return errclass.MappingError
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return errclass.PermissionDenied
	case status == http.StatusRequestEntityTooLarge:
		return errclass.MessageTooLarge
	}
	return errclass.PayloadInvalid
}

func classifyResponse(status int, body []byte) error {
	re := parseResponseError(status, body)
	return errclass.New(reasonFor(status, re.Type), re)
}

// classifyTransport classifies an error that produced no HTTP answer:
// deadlines are timeout; connection refused or reset, DNS failures and a
// server that is not Elasticsearch are unavailable.
func classifyTransport(err error) error {
	if err == nil {
		return nil
	}
	var ce *errclass.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errclass.New(errclass.Timeout, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errclass.New(errclass.Timeout, err)
	}
	return errclass.New(errclass.Unavailable, err)
}
