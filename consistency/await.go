package consistency

import (
	"context"
	"errors"

	kerrors "github.com/go-kratos/kratos/v2/errors"
)

// Reasons of the Kratos errors Await answers with (errors.Reason on the
// wire).
const (
	// ReasonReadModelBehind: 503, retryable; the read model has not
	// applied the request's tokens within the wait.
	ReasonReadModelBehind = "READ_MODEL_BEHIND"
	// ReasonInvalidToken: 400; a token of the request does not parse, or
	// names an aggregate id the read model cannot hold.
	ReasonInvalidToken = "INVALID_CONSISTENCY_TOKEN"
)

// Await makes the Kratos request ctx serves read its own writes: it waits
// with w (DefaultWait) until readModel holds the request's tokens
// (Requested) and returns the error to answer the request with:
//
//   - nil once the read model holds them; waited reports whether there
//     were tokens to wait for (a read that waited may need a fresher view,
//     e.g. a search index refreshed);
//   - nil and waited false without tokens or with a nil w;
//   - a Kratos 400 (ReasonInvalidToken, metadata "field": TokenHeader) for
//     a malformed token;
//   - a Kratos 503 (ReasonReadModelBehind) when the wait ran out;
//   - otherwise the lookup's error, unchanged (the caller's INTERNAL).
func Await(ctx context.Context, w *Waiter, readModel string) (waited bool, err error) {
	tokens, err := Requested(ctx)
	if err != nil {
		return false, invalidToken(err)
	}
	if w == nil || len(tokens) == 0 {
		return false, nil
	}
	err = w.Wait(ctx, readModel, tokens, 0)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrTimeout):
		return false, kerrors.ServiceUnavailable(ReasonReadModelBehind,
			"read model "+readModel+" has not caught up with the consistency tokens yet: retry")
	case errors.Is(err, ErrMalformed):
		return false, invalidToken(err)
	}
	return false, err
}

func invalidToken(err error) error {
	return kerrors.BadRequest(ReasonInvalidToken, TokenHeader+": "+err.Error()).
		WithMetadata(map[string]string{"field": TokenHeader})
}
