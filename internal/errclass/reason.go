package errclass

import (
	"context"
	"errors"
	"fmt"
)

// Reason classifies a failure. Transient reasons are retried with backoff;
// the others are deterministic: retrying cannot help, so the event fails
// terminally (publisher) or is dead-lettered (projector).
type Reason string

// Transient reasons.
const (
	Unavailable Reason = "unavailable"
	Timeout     Reason = "timeout"
	RateLimited Reason = "rate_limited"
	ServerError Reason = "server_error"
	// PreconditionFailed: the service refused because of the state of a
	// resource (a topic's encryption key, a region policy), which an
	// operator can fix; the event itself is fine, so it is retried.
	PreconditionFailed Reason = "precondition_failed"
	// RequestInvalid: the service refused a request eventrelay itself
	// built (ordering keys mixed in one Publish, too many messages or
	// bytes in one request): a defect in eventrelay or its client
	// library, never the event's fault. Retried, so no event fails for
	// it, and always logged at error level (see Defect).
	RequestInvalid Reason = "request_invalid"
	// SchemaMissing: the configured schema lacks the eventrelay tables
	// (unmigrated database or wrong DATABASE_SCHEMA). Transient: nothing is
	// failed or dead-lettered; it resolves with `relayctl migrate up`.
	SchemaMissing Reason = "schema_missing"
	// AuthenticationFailed: a store refused the credentials (Postgres
	// SQLSTATE 28P01 invalid_password, 28000
	// invalid_authorization_specification: a wrong password or user, a
	// pg_hba rule). Transient: nothing about the event is wrong, so nothing
	// is failed or dead-lettered; it resolves when an operator fixes the
	// credentials (the secret, DATABASE_URL).
	AuthenticationFailed Reason = "authentication_failed"
	// PermissionDenied: a store or Pub/Sub refused the caller's identity
	// (Postgres SQLSTATE 42501, Elasticsearch 401/403, Pub/Sub
	// PERMISSION_DENIED). Transient and environmental: a grant missing,
	// revoked or not yet propagated is never the event's fault, so nothing
	// is failed or dead-lettered for it; it resolves when an operator grants
	// the privilege.
	PermissionDenied Reason = "permission_denied"
)

// Deterministic reasons.
const (
	PayloadInvalid  Reason = "payload_invalid"
	MessageTooLarge Reason = "message_too_large"
	MappingError    Reason = "mapping_error"
	// TopicNotFound: Pub/Sub NOT_FOUND for a topic ("Resource not found
	// (resource=<topic>)." from Cloud Pub/Sub to a Publish; "Topic not
	// found" and "Subscription topic does not exist" from the emulator).
	// The relay blocks the topic until it exists (see Environmental).
	TopicNotFound Reason = "topic_not_found"
	// SubscriptionNotFound: Pub/Sub NOT_FOUND for a subscription ("Resource
	// not found (resource=<subscription>)." from Cloud Pub/Sub to a
	// StreamingPull, Pull, Acknowledge or GetSubscription; "Subscription
	// does not exist" from the emulator). Retrying the same call cannot
	// help until an operator creates it (relayctl pubsub ensure); the
	// projector keeps retrying Receive with backoff meanwhile.
	SubscriptionNotFound Reason = "subscription_not_found"
	// SnapshotNotFound: Pub/Sub NOT_FOUND for a snapshot ("Resource not
	// found (resource=<snapshot>)." from Cloud Pub/Sub to a Seek or
	// DeleteSnapshot; "Snapshot does not exist" from the emulator): a
	// wrong name, or it expired (snapshots live at most 7 days).
	SnapshotNotFound Reason = "snapshot_not_found"
	// AlreadyExists: Pub/Sub ALREADY_EXISTS ("Resource already exists in
	// the project (resource=<id>)." from Cloud Pub/Sub; "Topic already
	// exists", "Subscription already exists", "Snapshot already exists"
	// from the emulator) to a create: choose another name or delete the
	// existing resource; the same call always fails again.
	AlreadyExists     Reason = "already_exists"
	AttributesMissing Reason = "attributes_missing"
	SchemaUnsupported Reason = "schema_unsupported"
	EventTypeUnknown  Reason = "event_type_unknown"
	MaxAttempts       Reason = "max_attempts_exceeded"
)

// Unknown is used for errors no adapter classified. It is treated as
// transient: an unexplained error must not destroy data, and max_attempts
// bounds the retries.
const Unknown Reason = "unknown"

var transient = map[Reason]bool{
	Unavailable: true, Timeout: true, RateLimited: true, ServerError: true, SchemaMissing: true, Unknown: true,
	PreconditionFailed: true, RequestInvalid: true, AuthenticationFailed: true, PermissionDenied: true,
}

// All lists every reason, transient first.
var All = []Reason{
	Unavailable, Timeout, RateLimited, ServerError, SchemaMissing, Unknown, PreconditionFailed, RequestInvalid,
	AuthenticationFailed, PermissionDenied,
	PayloadInvalid, MessageTooLarge, MappingError, TopicNotFound,
	SubscriptionNotFound, SnapshotNotFound, AlreadyExists,
	AttributesMissing, SchemaUnsupported, EventTypeUnknown, MaxAttempts,
}

// Transient reports whether retrying may succeed.
func (r Reason) Transient() bool { return transient[r] }

// Environmental reports whether r is a property of the environment (a
// topic that does not exist yet, a permission not granted or not yet
// propagated, credentials refused) rather than of the event: the relay
// pauses publishing to the topic and retries with backoff, never failing
// a row for it, because the cause clears without touching the event. A
// publish never answers subscription_not_found: the relay gives it to rows
// it holds while a subscription declared for their topic is detached.
func (r Reason) Environmental() bool {
	return r == TopicNotFound || r == PermissionDenied || r == SubscriptionNotFound
}

// Defect reports whether r means eventrelay itself is at fault (a request
// it built was refused): callers log it at error level and count it, so a
// retry path never absorbs a bug quietly.
func (r Reason) Defect() bool { return r == RequestInvalid }

// Valid reports whether r is one of All.
func (r Reason) Valid() bool {
	for _, k := range All {
		if k == r {
			return true
		}
	}
	return false
}

// Error is an error with a Reason. Wrap with New; read with Of.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// New attaches reason to err. A nil err yields nil.
func New(reason Reason, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Reason: reason, Err: err}
}

// Newf is New with a formatted message.
func Newf(reason Reason, format string, args ...any) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Of returns the reason of the outermost classified error in err's chain.
// Context cancellation and deadline errors are Timeout; anything else
// unclassified is Unknown.
func Of(err error) Reason {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Timeout
	}
	return Unknown
}

// IsTransient reports whether err is worth retrying.
func IsTransient(err error) bool { return Of(err).Transient() }

// Marked is implemented by errors that carry their own classification (the
// projection package's Permanent and Retry markers): Classification
// prefers the outermost one to an *Error.
type Marked interface {
	ErrorClass() (reason Reason, permanent bool)
}

// Classification returns the classification err's chain carries: the
// outermost Marked error's, else the outermost *Error's (permanent unless
// its reason is transient). ok is false when the chain carries none.
func Classification(err error) (reason Reason, permanent, ok bool) {
	var m Marked
	if errors.As(err, &m) {
		reason, permanent = m.ErrorClass()
		return reason, permanent, true
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, !e.Reason.Transient(), true
	}
	return "", false, false
}
