package biz

import (
	"fmt"

	"github.com/go-kratos/kratos/v2/errors"
	"github.com/google/uuid"
)

// Error reasons of the orders API (errors.Reason on the wire).
const (
	ReasonInvalidArgument = "INVALID_ARGUMENT"
	ReasonOrderNotFound   = "ORDER_NOT_FOUND"
	ReasonStateConflict   = "ORDER_STATE_CONFLICT"
	ReasonInternal        = "INTERNAL"
	ReasonReadModelBehind = "READ_MODEL_BEHIND"
	ReasonSearchDisabled  = "SEARCH_DISABLED"
)

// InvalidArgument is a 400 naming the field (metadata["field"]).
func InvalidArgument(field, format string, args ...any) error {
	return errors.BadRequest(ReasonInvalidArgument, field+": "+fmt.Sprintf(format, args...)).
		WithMetadata(map[string]string{"field": field})
}

// OrderNotFound is a 404 for id.
func OrderNotFound(id uuid.UUID) error {
	return errors.NotFound(ReasonOrderNotFound, fmt.Sprintf("order %s not found", id))
}

// StateConflict is a 409: the order's status does not allow the change.
func StateConflict(format string, args ...any) error {
	return errors.Conflict(ReasonStateConflict, fmt.Sprintf(format, args...))
}

// ReadModelBehind is a 503 (retryable): the read model has not applied the
// writes the request's consistency tokens name within the wait.
func ReadModelBehind(readModel string) error {
	return errors.ServiceUnavailable(ReasonReadModelBehind, readModel+" has not caught up with the consistency tokens yet: retry")
}

// SearchDisabled is a 503: the search read path is off (no ELASTIC_URL, or
// READ_PATH_SEARCH=false).
func SearchDisabled() error {
	return errors.ServiceUnavailable(ReasonSearchDisabled, "the search read path is off (ELASTIC_URL, READ_PATH_SEARCH)")
}
