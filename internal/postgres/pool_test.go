package postgres_test

import (
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// There is no default schema: Config takes it from Schema or else from the
// URL's search_path, and says what to set when neither names one.
func TestConfigSchemaIsRequiredOrFromTheURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, schema, want, err string
	}{
		{"postgres://u@h/db", "orders", "orders", ""},
		{"postgres://u@h/db?search_path=billing,public", "", "billing", ""},
		{"postgres://u@h/db?search_path=billing", "orders", "orders", ""},
		{"host=h dbname=db search_path=stock", "", "stock", ""},
		{"postgres://u@h/db", "", "", "database.schema (DATABASE_SCHEMA) is required"},
	} {
		c := postgres.Config{URL: tc.url, Schema: tc.schema}
		err := c.Validate("database")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Validate(%q, %q) = %v, want an error saying %q", tc.url, tc.schema, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("Validate(%q, %q) = %v", tc.url, tc.schema, err)
		case tc.err == "" && c.Schema != tc.want:
			t.Errorf("Validate(%q, %q): schema %q, want %q", tc.url, tc.schema, c.Schema, tc.want)
		}
	}
}
