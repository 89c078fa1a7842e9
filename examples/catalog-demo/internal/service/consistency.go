package service

import (
	"context"
	"time"

	"github.com/go-kratos/kratos/v2/transport"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	kerrors "github.com/go-kratos/kratos/v2/errors"
)

// Headers (HTTP) and metadata keys (gRPC) of read-your-writes.
const (
	// TokenHeader carries a write's consistency token in its response, and
	// the tokens a read waits for in its request (repeated or
	// comma-separated).
	TokenHeader = "x-consistency-token"
	// WaitHeader bounds a read's wait (a Go duration, e.g. "500ms"; at most
	// the configured maximum).
	WaitHeader = "x-consistency-wait"
)

// answerToken sets the write's token on the response header (HTTP) or
// header metadata (gRPC) and returns it for the response field.
func answerToken(ctx context.Context, v *catalogv1.Video) string {
	tok := biz.TokenOf(v.GetId(), v.GetVersion()).String()
	if tr, ok := transport.FromServerContext(ctx); ok {
		tr.ReplyHeader().Set(TokenHeader, tok)
	}
	return tok
}

// readConsistency is what a read waits for: the tokens of the request's
// header or metadata and of its consistency_tokens field, and its wait.
func readConsistency(ctx context.Context, fromField []string) (biz.Consistency, error) {
	var raw []string
	var wait string
	if tr, ok := transport.FromServerContext(ctx); ok {
		raw = append(raw, tr.RequestHeader().Values(TokenHeader)...)
		wait = tr.RequestHeader().Get(WaitHeader)
	}
	header, err := biz.ParseTokens(TokenHeader, raw)
	if err != nil {
		return biz.Consistency{}, err
	}
	field, err := biz.ParseTokens("consistency_tokens", fromField)
	if err != nil {
		return biz.Consistency{}, err
	}
	c := biz.Consistency{Tokens: append(header, field...)}
	if wait != "" {
		d, err := time.ParseDuration(wait)
		if err != nil || d <= 0 {
			return biz.Consistency{}, kerrors.BadRequest(catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(),
				WaitHeader+": must be a positive duration such as 500ms, got "+wait).
				WithMetadata(map[string]string{"field": WaitHeader})
		}
		c.Wait = d
	}
	return c, nil
}
