package consistency

import (
	"context"

	"github.com/go-kratos/kratos/v2/transport"
)

// TokenHeader is the HTTP header and gRPC metadata key of read-your-writes
// in a Kratos service: a write's response carries its token in it, and a
// read's request the tokens to wait for (repeated, or comma-separated).
const TokenHeader = "x-consistency-token"

// Reply sets tok on the response header (HTTP) or header metadata (gRPC)
// of the Kratos request ctx serves, and returns its text form for a
// response field.
func Reply(ctx context.Context, tok Token) string {
	s := tok.String()
	if tr, ok := transport.FromServerContext(ctx); ok {
		tr.ReplyHeader().Set(TokenHeader, s)
	}
	return s
}

// Requested returns the tokens of the Kratos request ctx serves (its
// TokenHeader values): none outside a Kratos request or without the
// header, an error wrapping ErrMalformed for one that does not parse.
func Requested(ctx context.Context) ([]Token, error) {
	tr, ok := transport.FromServerContext(ctx)
	if !ok {
		return nil, nil
	}
	return ParseAll(tr.RequestHeader().Values(TokenHeader))
}
