package server_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestHTTPDeleteValidatesItsBody: DELETE /v1/videos/{id} reads the
// request's fields from a JSON body as well as from the query, and
// validates them wherever they come from: a reason over 1,000 characters
// in the body is refused as in the query, an unknown field is refused,
// and a field given in both places is refused rather than one silently
// winning. Nothing is deleted by a refused request.
func TestHTTPDeleteValidatesItsBody(t *testing.T) {
	t.Parallel()
	c := client{t: t, base: newHTTP(t, relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets}).URL).URL}
	var created catalogv1.CreateVideoResponse
	c.ok("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"doomed"}`, &created)
	path := "/v1/videos/" + created.GetVideo().GetId()

	for _, tc := range []struct{ path, body, field string }{
		{path, `{"reason":"` + strings.Repeat("r", 1001) + `"}`, "reason"},
		{path, `{"reason":"ok","bogus":1}`, "bogus"},
		{path + "?reason=query", `{"reason":"body"}`, "reason"},
		{path, `{"expected_version":"0"}`, "expected_version"},
	} {
		e := c.fails("DELETE", tc.path, tc.body, 400, "ERROR_REASON_INVALID_ARGUMENT")
		if !strings.HasPrefix(e.Message, tc.field+": ") {
			t.Errorf("DELETE %s %.60s: message %q does not start with %q", tc.path, tc.body, e.Message, tc.field+": ")
		}
	}
	var deleted catalogv1.DeleteVideoResponse
	c.ok("DELETE", path, `{"reason":"from the body","expected_version":"1"}`, &deleted)
	if deleted.GetVideo().GetVersion() != 2 || deleted.GetVideo().GetDeletedAt() == nil {
		t.Errorf("deleted %v, want version 2 with deleted_at", deleted.GetVideo())
	}
}
