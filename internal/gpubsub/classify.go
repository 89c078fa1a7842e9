package gpubsub

import (
	"context"
	"errors"

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
//	InvalidArgument, FailedPrecondition -> payload_invalid
//	  (and message_too_large when the client refused an oversize message)
//	NotFound                            -> topic_not_found
//	PermissionDenied, Unauthenticated   -> permission_denied
//
// nil and already-classified errors pass through.
func Classify(err error) error {
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
	return errclass.New(reasonForCode(st.Code()), err)
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
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return errclass.PayloadInvalid
	case codes.NotFound:
		return errclass.TopicNotFound
	case codes.PermissionDenied, codes.Unauthenticated:
		return errclass.PermissionDenied
	default:
		return errclass.Unknown
	}
}
