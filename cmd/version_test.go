package cmd_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinariesPrintStampedVersion links every binary with the same -X flag
// `make build` uses and runs --version: it fails if a binary lacks the flag
// or the stamp does not reach it.
func TestBinariesPrintStampedVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build of every binary")
	}
	dir := t.TempDir()
	const stamp = "v9.9.9-test"
	// The generic daemons of this module, then the catalog demo's.
	for _, b := range []struct{ dir, pkgs string }{{"..", "./cmd/publisher ./cmd/relayctl"}, {"../examples/catalog-demo", "./cmd/projector ./cmd/catalog"}} {
		build := exec.Command("go", append([]string{"build", "-o", dir + "/",
			"-ldflags", "-X github.com/eventrelay/eventrelay/internal/version.Version=" + stamp + " -X main.version=" + stamp}, strings.Fields(b.pkgs)...)...)
		build.Dir = b.dir
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build in %s: %v\n%s", b.dir, err, out)
		}
	}
	for _, name := range []string{"publisher", "projector", "catalog", "relayctl"} {
		out, err := exec.Command(filepath.Join(dir, name), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", name, err, out)
		}
		// The daemons add the Go version and commit; the demo's print the stamp only.
		if rest, ok := strings.CutPrefix(string(out), name+" "+stamp); !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\n') {
			t.Errorf("%s --version printed %q, want prefix %q", name, out, name+" "+stamp)
		}
	}
}
