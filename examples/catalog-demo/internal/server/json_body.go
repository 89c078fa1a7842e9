package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
)

// strictJSON refuses unknown fields and unknown enum names. Kratos' JSON
// codec sets DiscardUnknown, which drops a misspelled field and turns
// "status":"VIDEO_STATUS_BOGUS" into an unset status, answered with 200.
var strictJSON = protojson.UnmarshalOptions{}

// limitBodies bounds every request body to max bytes: a larger body fails
// the read with *http.MaxBytesError (answered with 413) instead of being
// read in full.
func limitBodies(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, max)
			next.ServeHTTP(w, r)
		})
	}
}

// DecodeJSONBody decodes a JSON request body into m strictly. A bad body
// is a 400 Kratos error whose message starts with the field it names
// (metadata["field"]): the proto field name of an unknown field, a field
// with an invalid value (e.g. an unknown enum name), or "request" when the
// body is not a JSON object at all. A body over the server's limit is 413.
func DecodeJSONBody(body io.Reader, m proto.Message) error {
	data, err := io.ReadAll(body)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return kerrors.New(http.StatusRequestEntityTooLarge, catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(),
				fmt.Sprintf("request: body exceeds %d bytes", mbe.Limit)).
				WithMetadata(map[string]string{"field": "request"})
		}
		return badField("request", "reading the body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil // no body: every field unset, as Kratos binds it
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return badField("request", "body is not a JSON object: %v", err)
	}
	desc := m.ProtoReflect().Descriptor().Fields()
	// Decode field by field first, so an error names its field.
	for key, raw := range fields {
		fd := desc.ByJSONName(key)
		if fd == nil {
			fd = desc.ByTextName(key)
		}
		switch {
		case fd == nil && key == "":
			return badField("request", "a field with an empty name")
		case fd == nil:
			return badField(key, "unknown field")
		}
		if !utf8.Valid(raw) {
			return badField(string(fd.Name()), "value is not valid UTF-8")
		}
		one, err := json.Marshal(map[string]json.RawMessage{key: raw})
		if err != nil {
			return badField(string(fd.Name()), "%v", err)
		}
		if err := strictJSON.Unmarshal(one, m.ProtoReflect().New().Interface()); err != nil {
			return badField(string(fd.Name()), "invalid value %s", describe(fd, raw))
		}
	}
	if err := strictJSON.Unmarshal(data, m); err != nil {
		return badField("request", "%v", err) // e.g. a field given twice under both names
	}
	return nil
}

// describe says what was wrong with raw for field fd, listing the names
// an enum field accepts.
func describe(fd protoreflect.FieldDescriptor, raw json.RawMessage) string {
	s := cutText(string(raw), 80)
	if fd.Kind() != protoreflect.EnumKind {
		return fmt.Sprintf("%s for a %s field", s, fd.Kind())
	}
	values := fd.Enum().Values()
	names := make([]string, 0, values.Len())
	for i := range values.Len() {
		names = append(names, string(values.Get(i).Name()))
	}
	return fmt.Sprintf("%s: not one of %v", s, names)
}

// badField is a 400 naming field. Both the field and the message may
// carry what the client sent: they are made valid UTF-8 (an error body
// is JSON, which cannot carry anything else).
func badField(field, format string, args ...any) error {
	field = strings.ToValidUTF8(field, "\uFFFD")
	msg := strings.ToValidUTF8(field+": "+fmt.Sprintf(format, args...), "\uFFFD")
	return kerrors.BadRequest(catalogv1.ErrorReason_ERROR_REASON_INVALID_ARGUMENT.String(), msg).
		WithMetadata(map[string]string{"field": field})
}

// cutText is s as valid UTF-8, cut to at most max bytes on a character
// boundary ("…" marks a cut).
func cutText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
