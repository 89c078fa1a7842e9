package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
)

// encodeError writes every error answer of the HTTP API. It logs the
// answers to requests that never reached the middleware (observe), which
// logs the others: refusals made while binding the request (method, path,
// code, reason, field, message; 5xx at error level, the others at info).
//
// The message and metadata are made valid UTF-8 first: they may quote
// what the client sent, and Kratos' encoder answers a body protojson
// refuses with a bare 500.
func encodeError(log *slog.Logger) khttp.EncodeErrorFunc {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		se := validUTF8(kerrors.FromError(err))
		if observed(r) {
			khttp.DefaultErrorEncoder(w, r, se)
			return
		}
		level := slog.LevelInfo
		if se.Code >= http.StatusInternalServerError {
			level = slog.LevelError
		}
		attrs := []any{"method", r.Method, "path", strings.ToValidUTF8(r.URL.Path, "\uFFFD"), "code", se.Code,
			"reason", se.Reason, "field", se.Metadata["field"], "message", se.Message}
		if cause := se.Unwrap(); cause != nil && level == slog.LevelError {
			attrs = append(attrs, "error", cause.Error())
		}
		log.Log(r.Context(), level, "error answer", attrs...)
		khttp.DefaultErrorEncoder(w, r, se)
	}
}

// validUTF8 is se with its message and metadata made valid UTF-8.
func validUTF8(se *kerrors.Error) *kerrors.Error {
	md := make(map[string]string, len(se.Metadata))
	for k, v := range se.Metadata {
		md[strings.ToValidUTF8(k, "\uFFFD")] = strings.ToValidUTF8(v, "\uFFFD")
	}
	return kerrors.New(int(se.Code), strings.ToValidUTF8(se.Reason, "\uFFFD"), strings.ToValidUTF8(se.Message, "\uFFFD")).
		WithMetadata(md).WithCause(se.Unwrap())
}

// observedKey keys, in an HTTP request's context, whether the request
// reached the middleware (observe logs its answer then).
type observedKey struct{}

// markObserved gives every HTTP request the flag observe sets.
func markObserved(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), observedKey{}, new(atomic.Bool))))
	})
}

// setObserved records that the request of ctx reached the middleware.
func setObserved(ctx context.Context) {
	if f, ok := ctx.Value(observedKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// observed reports whether r reached the middleware.
func observed(r *http.Request) bool {
	f, ok := r.Context().Value(observedKey{}).(*atomic.Bool)
	return ok && f.Load()
}
