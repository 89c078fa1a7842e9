package postgres

import (
	"strings"
	"testing"
)

// TestRedactSurvivesMalformedURLs: the password leaves Redact's output in
// every form, also one with an unescaped @ or other characters url.Parse
// refuses, and Scrub removes it (and its pieces a parser splitting at an
// @ would print as a host) from any text.
func TestRedactSurvivesMalformedURLs(t *testing.T) {
	const pw = "PlantedPW"
	for _, dsn := range []string{
		"postgres://user:Zq9@" + pw + "@127.0.0.1:5432/db",
		"postgres://user:" + pw + "@@127.0.0.1/db",
		"postgres://user:" + pw + "@x@y@127.0.0.1/db?sslmode=disable",
		"postgres://user:a/" + pw + "@127.0.0.1/db",
		"postgres://user:" + pw + " x@127.0.0.1:5432/%zz",
		"postgres://user:" + pw + "@127.0.0.1:notaport/db",
		"postgresql://user@127.0.0.1/db?password=" + pw + "&sslmode=disable",
		"host=127.0.0.1 user=u password=" + pw + " dbname=db",
		"host=127.0.0.1 user=u password='" + pw + " with space' dbname=db",
	} {
		if got := Redact(dsn); strings.Contains(got, pw) {
			t.Errorf("Redact(%q) = %q", dsn, got)
		}
		msg := "connecting to " + dsn + ": failed"
		if got := NewScrubber(dsn).Scrub(msg); strings.Contains(got, pw) {
			t.Errorf("Scrub with %q: %q", dsn, got)
		}
	}
	lookup := "dial tcp: lookup " + pw + "@127.0.0.1: no such host"
	if got := NewScrubber("postgres://user:Zq9@" + pw + "@127.0.0.1:5432/db").Scrub(lookup); strings.Contains(got, pw) {
		t.Errorf("Scrub of a host lookup of the password's tail: %q", got)
	}
	if got := Redact("postgres://user:secret@db.internal:5432/app?sslmode=require"); got != "postgres://user:xxxxx@db.internal:5432/app?sslmode=require" {
		t.Errorf("a well-formed URL: %q", got)
	}
	if err := (&Config{URL: "postgres://user:Zq9@" + pw + "@127.0.0.1/db", Schema: "s"}).Validate("database"); err == nil ||
		!strings.Contains(err.Error(), "%40") || strings.Contains(err.Error(), pw) {
		t.Errorf("Validate of a URL with an unescaped @ in its password: %v; want a refusal saying to write it %%40, without the password", err)
	}
}
