package consistency

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// tokenVersion is the first field of every token's text form.
const tokenVersion = "v1"

// Token names what a write wrote: the aggregate and the version the write
// produced. A read model has "seen" the token once it holds that aggregate
// at Version or newer (a deletion holds it as a tombstone).
type Token struct {
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
}

// ErrMalformed is wrapped by every Parse error, and by the error of a Wait
// for a token whose aggregate id the read model's key cannot hold
// (TableLookup).
var ErrMalformed = errors.New("malformed consistency token")

// String is the opaque text form: base64url (no padding) of
// "v1|<version>|<aggregate type>|<aggregate id>". The aggregate type must
// not contain '|' (Validate); the id is the last field and may.
func (t Token) String() string {
	raw := tokenVersion + "|" + strconv.FormatInt(t.AggregateVersion, 10) + "|" + t.AggregateType + "|" + t.AggregateID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// Validate reports whether t can be sent and parsed back.
func (t Token) Validate() error {
	switch {
	case t.AggregateType == "" || strings.ContainsAny(t.AggregateType, "|\n"):
		return fmt.Errorf("%w: aggregate type %q is empty or contains '|' or a newline", ErrMalformed, t.AggregateType)
	case t.AggregateID == "" || strings.Contains(t.AggregateID, "\n"):
		return fmt.Errorf("%w: aggregate id is empty or contains a newline", ErrMalformed)
	case t.AggregateVersion < 1:
		return fmt.Errorf("%w: version %d is below 1", ErrMalformed, t.AggregateVersion)
	}
	return nil
}

// Parse reads a token's text form.
func Parse(s string) (Token, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return Token{}, fmt.Errorf("%w: not base64url", ErrMalformed)
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) != 4 {
		return Token{}, fmt.Errorf("%w: %d fields, want 4", ErrMalformed, len(parts))
	}
	if parts[0] != tokenVersion {
		return Token{}, fmt.Errorf("%w: format %q is not %s", ErrMalformed, parts[0], tokenVersion)
	}
	v, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return Token{}, fmt.Errorf("%w: version %q is not a number", ErrMalformed, parts[1])
	}
	t := Token{AggregateType: parts[2], AggregateID: parts[3], AggregateVersion: v}
	if err := t.Validate(); err != nil {
		return Token{}, err
	}
	return t, nil
}

// ParseAll parses every non-empty element of ss; an element may itself be
// a comma-separated list (as one HTTP header line carries several).
func ParseAll(ss []string) ([]Token, error) {
	var out []Token
	for _, s := range ss {
		for _, f := range strings.Split(s, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			t, err := Parse(f)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}
