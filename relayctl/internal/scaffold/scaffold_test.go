package scaffold_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/relayctl/internal/scaffold"
	"github.com/eventrelay/eventrelay/relaytest"
)

// billing is the service the tests generate.
func billing(dir string) scaffold.Spec {
	return scaffold.Spec{Dir: dir, Module: "example.com/billing", Name: "billing", Aggregate: "Invoice",
		Events: []string{"Issued", "Paid", "Voided"}, EventrelayVersion: "v0.0.0-00010101000000-000000000000"}
}

// checkout is this repository's root, the generated module's replacement
// of eventrelay.
func checkout(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestGeneratedServicePasses: a service generated outside the repository
// (its go.mod replacing eventrelay with this checkout) builds, vets and
// passes its own end-to-end test as written.
func TestGeneratedServicePasses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a generated module (minutes on a cold build cache)")
	}
	dbURL := relaytest.AdminURL(t)
	dir := filepath.Join(t.TempDir(), "billing")
	spec := billing(dir)
	spec.Replace = checkout(t)
	start := time.Now()
	files, err := scaffold.Write(spec)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "TEST_DATABASE_URL="+dbURL)
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "-count=1", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the generated service: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s: %s", strings.Join(args, " "), bytes.TrimSpace(out))
	}
	t.Logf("generated %d files, built, vetted and tested in %s", len(files), time.Since(start).Round(time.Second))
}

// TestGeneratedCodeIsProtocs: the Go code written for the contract is
// what protoc with protoc-gen-go (the service's `make generate`) writes
// for the .proto file written beside it.
func TestGeneratedCodeIsProtocs(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("no protoc on PATH (Debian: apt-get install protobuf-compiler)")
	}
	dir := t.TempDir()
	if _, err := scaffold.Write(billing(dir)); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(t.TempDir(), "protoc-gen-go")
	if out, err := exec.Command("go", "build", "-o", plugin, "google.golang.org/protobuf/cmd/protoc-gen-go").CombinedOutput(); err != nil {
		t.Fatalf("building protoc-gen-go: %v\n%s", err, out)
	}
	out := t.TempDir()
	cmd := exec.Command(protoc, "--plugin=protoc-gen-go="+plugin, "-I", filepath.Join(dir, "api"),
		"--go_out="+out, "--go_opt=paths=source_relative", filepath.Join(dir, "api", "billing", "v1", "events.proto"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	const file = "billing/v1/events.pb.go"
	want, err := os.ReadFile(filepath.Join(out, file))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "api", file))
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`(?m)^// \tprotoc +.*$`) // protoc's version, "(unknown)" in process
	if g, w := version.ReplaceAll(got, nil), version.ReplaceAll(want, nil); !bytes.Equal(g, w) {
		t.Errorf("written %s differs from protoc's:\n--- written\n%s\n--- protoc\n%s", file, g, w)
	}
}

// TestWriteRefuses: a bad request names its flag, and nothing is written
// over an existing module.
func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		edit func(*scaffold.Spec)
		want string
	}{
		{func(s *scaffold.Spec) { s.Module = "" }, "--module"},
		{func(s *scaffold.Spec) { s.Name = "Billing-2" }, "--name"},
		{func(s *scaffold.Spec) { s.Aggregate = "invoice" }, "--aggregate"},
		{func(s *scaffold.Spec) { s.Events = nil }, "--events"},
		{func(s *scaffold.Spec) { s.Events = []string{"Paid", "Paid"} }, `"Paid" is named twice`},
		{func(s *scaffold.Spec) { s.Events = []string{"paid"} }, "--events"},
	} {
		s := billing(filepath.Join(dir, "new"))
		c.edit(&s)
		if _, err := scaffold.Write(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%+v): %v, want an error naming %s", s, err, c.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scaffold.Write(billing(dir)); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Write into a non-empty directory: %v, want refused", err)
	}
}
