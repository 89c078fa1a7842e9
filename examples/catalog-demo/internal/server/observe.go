package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"github.com/go-kratos/kratos/v2/middleware"
	"github.com/go-kratos/kratos/v2/transport"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/projection"
)

// observe logs every request (operation, code, reason, latency_ms) and
// turns errors that are not Kratos errors — storage failures, classified
// by the data layer (projection.Classify reads it) — into API errors that
// carry no internal detail: 503 for transient reasons (retry), 500
// otherwise. The full error
// is logged.
func observe(log *slog.Logger) middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req any) (any, error) {
			start := time.Now()
			setObserved(ctx)
			reply, err := next(ctx, req)
			var op string
			if tr, ok := transport.FromServerContext(ctx); ok {
				op = tr.Operation()
			}
			var ke *kerrors.Error
			if err != nil && !errors.As(err, &ke) {
				reason, permanent := projection.Classify(err)
				log.ErrorContext(ctx, "request failed", "operation", op, "error_reason", string(reason), "error", err.Error())
				err = internal(reason, permanent, err)
			}
			se := kerrors.FromError(err)
			code, apiReason := int32(200), ""
			if se != nil {
				code, apiReason = se.Code, se.Reason
			}
			log.InfoContext(ctx, "request", "operation", op, "code", code, "reason", apiReason,
				"latency_ms", time.Since(start).Milliseconds())
			return reply, err
		}
	}
}

func internal(reason projection.Reason, permanent bool, err error) error {
	if reason == projection.PermissionDenied {
		return kerrors.ServiceUnavailable(catalogv1.ErrorReason_ERROR_REASON_UNAVAILABLE.String(),
			"temporarily unavailable (permission_denied: the service's database role lacks a privilege this request needs; /readyz names it), retry").WithCause(err)
	}
	if !permanent && reason != projection.Unknown {
		return kerrors.ServiceUnavailable(catalogv1.ErrorReason_ERROR_REASON_UNAVAILABLE.String(), "temporarily unavailable ("+string(reason)+"), retry").WithCause(err)
	}
	return kerrors.InternalServer(catalogv1.ErrorReason_ERROR_REASON_INTERNAL.String(), "internal error").WithCause(err)
}
