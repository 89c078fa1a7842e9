package projection

import (
	"errors"
	"fmt"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Reason classifies a failure; it is the error_reason attribute of a dead
// letter and the reason label of the failure metrics. It is the toolkit's
// error taxonomy (errclass), re-exported for handlers outside this module.
type Reason = errclass.Reason

// Reasons handlers and the engine use.
const (
	// Deterministic: dead-lettered.
	PayloadInvalid    = errclass.PayloadInvalid
	MappingError      = errclass.MappingError
	AttributesMissing = errclass.AttributesMissing
	SchemaUnsupported = errclass.SchemaUnsupported
	EventTypeUnknown  = errclass.EventTypeUnknown
	MessageTooLarge   = errclass.MessageTooLarge
	// Transient: nacked and redelivered.
	Unavailable = errclass.Unavailable
	Timeout     = errclass.Timeout
	RateLimited = errclass.RateLimited
	ServerError = errclass.ServerError
	Unknown     = errclass.Unknown
)

// class is implemented by the markers Permanent and Retry put in a chain.
type class interface {
	projectionClass() (Reason, bool)
}

type permanentError struct {
	reason Reason
	err    error
}

func (e *permanentError) Error() string                   { return fmt.Sprintf("%s: %v", e.reason, e.err) }
func (e *permanentError) Unwrap() error                   { return e.err }
func (e *permanentError) projectionClass() (Reason, bool) { return e.reason, true }

type retryError struct{ err error }

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }
func (e *retryError) projectionClass() (Reason, bool) {
	r := errclass.Of(e.err)
	if !r.Transient() {
		r = Unknown
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
// reason is err's errclass reason when that is transient, else unknown. A
// nil err yields nil.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &retryError{err: err}
}

// Classifier decides what to do with a handler error: its reason and
// whether it is permanent (dead-letter) or transient (nack). Engines accept
// a Classifier so a service can plug in its own rules.
type Classifier func(err error) (reason Reason, permanent bool)

// Classify is the default Classifier. The outermost Permanent or Retry
// marker decides; otherwise the errclass reason in the chain decides
// (deterministic reasons are permanent); anything unexplained is a
// transient unknown.
func Classify(err error) (Reason, bool) {
	if v, ok := ClassOf(err); ok {
		return v.Reason, v.Permanent
	}
	return errclass.Of(err), false
}

// Verdict is the classification found in an error chain.
type Verdict struct {
	Reason    Reason
	Permanent bool
}

// ClassOf returns the classification carried by err's chain (a Permanent
// or Retry marker, else an errclass reason) and whether there is one.
func ClassOf(err error) (Verdict, bool) {
	var c class
	if errors.As(err, &c) {
		r, p := c.projectionClass()
		return Verdict{r, p}, true
	}
	var ce *errclass.Error
	if errors.As(err, &ce) {
		return Verdict{ce.Reason, !ce.Reason.Transient()}, true
	}
	return Verdict{}, false
}
