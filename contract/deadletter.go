package contract

// Attributes a dead letter carries on top of all the original message's
// attributes: the projector writes them when it parks a message it can
// never apply, and dead-letter triage (relayctl dlq) reads them.
const (
	// AttrErrorReason is the failure's projection.Reason.
	AttrErrorReason = "error_reason"
	// AttrError is the error text, cut to MaxAttributeValueBytes.
	AttrError = "error"
	// AttrProjection is the name of the projection that failed.
	AttrProjection = "projection"
	// AttrDeliveryAttempt is the delivery attempt (0 without a
	// subscription dead-letter policy).
	AttrDeliveryAttempt = "delivery_attempt"
	// AttrOriginalMessageID is the dead-lettered message's ID.
	AttrOriginalMessageID = "original_message_id"
	// AttrDeadLetteredAt is when, RFC 3339 with nanoseconds, UTC.
	AttrDeadLetteredAt = "dead_lettered_at"
)

// DeadLetterAttributes are the attributes a dead letter adds, in the order
// triage shows them.
var DeadLetterAttributes = []string{AttrErrorReason, AttrError, AttrProjection, AttrDeliveryAttempt, AttrOriginalMessageID, AttrDeadLetteredAt}
