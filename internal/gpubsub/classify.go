package gpubsub

import (
	"context"
	"errors"
	"strings"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Classify translates a Pub/Sub client error into an errclass error:
//
//	Unavailable, Aborted, Canceled      -> unavailable   (transient)
//	DeadlineExceeded                    -> timeout       (transient)
//	ResourceExhausted                   -> rate_limited  (transient)
//	Internal, Unknown                   -> server_error  (transient)
//	FailedPrecondition                  -> request_invalid when the service
//	  says the request mixed ordering keys (a defect of the relay, never
//	  the event's), else precondition_failed (a resource's state: an
//	  operator fixes it; transient)
//	InvalidArgument, OutOfRange         -> request_invalid when the limit is
//	  the request's (message_count, request_size, payload size), else
//	  payload_invalid (the message itself); message_too_large when the
//	  client refused an oversize message
//	NotFound                            -> topic_not_found (Classify, a
//	  Publish) or the kind the service names or the call addressed:
//	  subscription_not_found, snapshot_not_found (see Target)
//	AlreadyExists                       -> already_exists
//	PermissionDenied, Unauthenticated   -> permission_denied
//
// nil and already-classified errors pass through. Calls addressed to a
// subscription or a snapshot classify with Target.Classify.
func Classify(err error) error { return classify(err, Target{}) }

func classify(err error, t Target) error {
	if err == nil {
		return nil
	}
	var ce *errclass.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, pubsub.ErrOversizedMessage) {
		return errclass.New(errclass.MessageTooLarge, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errclass.New(errclass.Timeout, err)
	}
	if errors.Is(err, context.Canceled) {
		return errclass.New(errclass.Unavailable, err)
	}
	st, ok := status.FromError(err)
	if !ok {
		return errclass.New(errclass.Unknown, err)
	}
	return errclass.New(t.reason(st), err)
}

// requestLimitPhrases are in the service's answers to requests that break
// a per-request limit or rule rather than a message's (the strict double,
// internal/gpubsub/strict, answers with the same texts).
var requestLimitPhrases = []string{
	"all messages must have no ordering key or they must all have the same ordering key",
	"passed message_count in the request",
	"passed request_size in the request",
	"Request payload size exceeds the limit",
	"at least one message",
}

func reasonForStatus(st *status.Status) errclass.Reason {
	r := reasonForCode(st.Code())
	if r != errclass.PayloadInvalid && r != errclass.PreconditionFailed {
		return r
	}
	for _, p := range requestLimitPhrases {
		if strings.Contains(st.Message(), p) {
			return errclass.RequestInvalid
		}
	}
	return r
}

func reasonForCode(c codes.Code) errclass.Reason {
	switch c {
	case codes.Unavailable, codes.Aborted, codes.Canceled:
		return errclass.Unavailable
	case codes.DeadlineExceeded:
		return errclass.Timeout
	case codes.ResourceExhausted:
		return errclass.RateLimited
	case codes.Internal, codes.Unknown, codes.DataLoss:
		return errclass.ServerError
	case codes.InvalidArgument, codes.OutOfRange:
		return errclass.PayloadInvalid
	case codes.FailedPrecondition:
		return errclass.PreconditionFailed
	case codes.AlreadyExists:
		return errclass.AlreadyExists
	case codes.PermissionDenied, codes.Unauthenticated:
		return errclass.PermissionDenied
	default:
		return errclass.Unknown
	}
}
