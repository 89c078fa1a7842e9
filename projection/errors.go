package projection

import (
	"fmt"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Reason classifies a failure; it is the error_reason attribute of a dead
// letter and the reason label of the failure metrics.
type Reason string

// Reasons handlers and the projector use.
const (
	// Deterministic: dead-lettered.
	PayloadInvalid    Reason = "payload_invalid"
	MappingError      Reason = "mapping_error"
	AttributesMissing Reason = "attributes_missing"
	SchemaUnsupported Reason = "schema_unsupported"
	EventTypeUnknown  Reason = "event_type_unknown"
	MessageTooLarge   Reason = "message_too_large"
	// Transient: nacked and redelivered.
	Unavailable Reason = "unavailable"
	Timeout     Reason = "timeout"
	RateLimited Reason = "rate_limited"
	ServerError Reason = "server_error"
	Unknown     Reason = "unknown"
	// PermissionDenied: a role lacks a privilege (a Postgres grant, an IAM
	// role); transient, held until granted, never dead-lettered. A
	// service's API answers it as unavailable, not as its caller's fault.
	PermissionDenied Reason = "permission_denied"
)

type permanentError struct {
	reason Reason
	err    error
}

func (e *permanentError) Error() string { return fmt.Sprintf("%s: %v", e.reason, e.err) }
func (e *permanentError) Unwrap() error { return e.err }

// ErrorClass implements errclass.Marked.
func (e *permanentError) ErrorClass() (errclass.Reason, bool) {
	return errclass.Reason(e.reason), true
}

type retryError struct{ err error }

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// ErrorClass implements errclass.Marked.
func (e *retryError) ErrorClass() (errclass.Reason, bool) {
	r := errclass.Of(e.err)
	if !r.Transient() {
		r = errclass.Unknown
	}
	return r, false
}

// Permanent marks err as deterministic: retrying cannot help, so the
// message is dead-lettered with reason (payload_invalid when empty) and
// acked. A nil err yields nil.
func Permanent(reason Reason, err error) error {
	if err == nil {
		return nil
	}
	if reason == "" {
		reason = PayloadInvalid
	}
	return &permanentError{reason: reason, err: err}
}

// Retry marks err as transient: the message is nacked and redelivered. Its
// reason is that of the classified error it wraps when transient (e.g. a
// Postgres or Elasticsearch outage), else unknown. A nil err yields nil.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &retryError{err: err}
}

// Classify is the projector's default classification of a handler error
// (a projector.Projection may plug in its own): its reason and whether it
// is permanent (dead-lettered) rather than transient (nacked). The
// outermost Permanent or Retry marker decides; otherwise the reason of a
// classified error in the chain (the Postgres and Elasticsearch adapters
// classify theirs), permanent when deterministic; anything unexplained is
// a transient unknown: an error nobody understood must not destroy a
// message.
func Classify(err error) (Reason, bool) {
	if r, permanent, ok := errclass.Classification(err); ok {
		return Reason(r), permanent
	}
	return Reason(errclass.Of(err)), false
}
