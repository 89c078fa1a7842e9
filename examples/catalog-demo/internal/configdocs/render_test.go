package main

import (
	"os"
	"strings"
	"testing"
)

// TestCommittedConfigurationIsGenerated: docs/configuration.md is what
// Render makes of it, so every key of each daemon's configuration struct
// has its row, with its variable and its default (make generate writes
// it; make verify fails on a difference).
func TestCommittedConfigurationIsGenerated(t *testing.T) {
	const path = "../../../../docs/configuration.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(doc) {
		t.Fatalf("%s differs from the generator's output: run make generate (cd examples/catalog-demo && go run ./internal/configdocs ../../docs/configuration.md) and commit", path)
	}
}

// Render writes a stale default anew, adds the row of an undocumented key,
// drops the row of a key no setting has, and keeps the document's
// meanings and phrase defaults.
func TestRenderFollowsTheStruct(t *testing.T) {
	var tables strings.Builder
	for _, name := range []string{"catalog", "projector"} {
		tables.WriteString("<!-- configdocs: " + name + " -->\n<!-- /configdocs -->\n")
	}
	doc := "# Configuration\n\nprose\n\n<!-- configdocs: publisher -->\n" + header +
		"| `outbox.lease` | `OUTBOX_LEASE_SECONDS` | `1s` | claim validity |\n" +
		"| `outbox.partition_heartbeat` | `OUTBOX_PARTITION_HEARTBEAT_SECONDS` | lease/4 | renew |\n" +
		"| `outbox.gone` | `OUTBOX_GONE` | `1` | no longer a setting |\n" +
		"<!-- /configdocs -->\n\nmore prose\n" + tables.String()
	out, err := Render([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"# Configuration\n\nprose\n\n",
		"| `outbox.lease` | `OUTBOX_LEASE_SECONDS` | `30s` | claim validity |\n",
		"| `outbox.partition_heartbeat` | `OUTBOX_PARTITION_HEARTBEAT_SECONDS` | lease/4 | renew |\n",
		"| `outbox.concurrency` | `OUTBOX_CONCURRENCY` | `4` | |\n",
		"| `outbox.listen` | `OUTBOX_LISTEN` | `true` | |\n",
		"| `server.http_addr` | `CATALOG_HTTP_ADDR` | `:8000` | |\n",
		"<!-- /configdocs -->\n\nmore prose\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Render's output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "outbox.gone") {
		t.Errorf("Render kept the row of a key no setting has:\n%s", got)
	}
	if _, err := Render([]byte("<!-- configdocs: publisher -->\n<!-- /configdocs -->\n")); err == nil {
		t.Error("Render accepted a document without the catalog's and the projector's tables")
	}
}
