package server

import (
	"log/slog"
	"net/http"
	"strings"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
)

// encodeError writes every error answer of the HTTP API and logs it
// (method, path, code, reason, field, message; 5xx at error level, the
// others at info). Refusals made while binding the request never reach
// the middleware (observe), so this is where they are logged.
//
// The message and metadata are made valid UTF-8 first: they may quote
// what the client sent, and Kratos' encoder answers a body protojson
// refuses with a bare 500.
func encodeError(log *slog.Logger) khttp.EncodeErrorFunc {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		se := validUTF8(kerrors.FromError(err))
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
