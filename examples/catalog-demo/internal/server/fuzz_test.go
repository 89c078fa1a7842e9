package server_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	kerrors "github.com/go-kratos/kratos/v2/errors"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
)

// FuzzDecodeJSONBody: any request body either decodes or is refused with
// a 400 (413 over the limit) whose message starts with the field it names
// (metadata["field"]) in valid UTF-8; never a panic, never an unclassified
// error.
func FuzzDecodeJSONBody(f *testing.F) {
	for _, s := range []string{
		`{"uploader_id":"0196f0a0-0000-7000-8000-000000000001","title":"t","status":"VIDEO_STATUS_PUBLISHED"}`,
		`{"uploaderId":"x","durationMicros":"12","status":2}`,
		`{"title":"t","expected_version":"3","media_status":"MEDIA_STATUS_READY"}`,
		`{"status":"VIDEO_STATUS_BOGUS"}`, `{"titel":"typo"}`, `{"title":"nul\u0000"}`,
		`[]`, `null`, `{`, `{"title":1}`, `{"title":"a","title":"b"}`, `{"uploader_id":"a","uploaderId":"b"}`,
		"", " ", `{"duration_micros":"9223372036854775808"}`,
		"{\"title\":\"\xff\"}", "{\"\xff\":1}", `{"status":"` + strings.Repeat("A", 78) + `é"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, m := range []proto.Message{&catalogv1.CreateVideoRequest{}, &catalogv1.UpdateVideoRequest{}} {
			r := http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(body)), 1<<10)
			err := server.DecodeJSONBody(r, m)
			if err == nil {
				continue
			}
			se := kerrors.FromError(err)
			field := se.GetMetadata()["field"]
			switch {
			case se.GetCode() != http.StatusBadRequest && se.GetCode() != http.StatusRequestEntityTooLarge:
				t.Fatalf("%T %q: code %d (%v), want 400 or 413", m, body, se.GetCode(), err)
			case se.GetCode() == http.StatusRequestEntityTooLarge && len(body) <= 1<<10:
				t.Fatalf("%T: 413 for a %d-byte body", m, len(body))
			case !utf8.ValidString(se.GetMessage()) || !utf8.ValidString(field):
				t.Fatalf("%T %q: message %q or field %q is not valid UTF-8 (an error body is JSON)", m, body, se.GetMessage(), field)
			case field == "" || !strings.HasPrefix(se.GetMessage(), field+": "):
				t.Fatalf("%T %q: %q does not name its field (%q)", m, body, se.GetMessage(), field)
			}
		}
	})
}
