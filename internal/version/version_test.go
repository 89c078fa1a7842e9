package version

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatStampedIgnoresVCS(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"},
	}}
	got := format("publisher", "v1.2.3-4-gabc", info)
	if want := "publisher v1.2.3-4-gabc (go1.26.8, linux/amd64)"; got != want {
		t.Fatalf("format = %q, want %q", got, want)
	}
}

func TestFormatUnstampedFallsBackToVCS(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := format("catalog", "", info)
	if want := "catalog devel (go1.26.8, vcs git 0123456789ab dirty)"; got != want {
		t.Fatalf("format = %q, want %q", got, want)
	}
	if got := format("catalog", "", nil); got != "catalog devel" {
		t.Fatalf("format without build info = %q", got)
	}
}

// TestBinariesPrintStampedVersion links every binary with the same -X flag
// `make build` uses and runs --version: it fails if a binary lacks the flag
// or the stamp does not reach it.
func TestBinariesPrintStampedVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the build of every binary")
	}
	dir := t.TempDir()
	const stamp = "v9.9.9-test"
	build := exec.Command("go", "build", "-o", dir+"/",
		"-ldflags", "-X github.com/eventrelay/eventrelay/internal/version.Version="+stamp,
		"./cmd/publisher", "./cmd/projector", "./cmd/catalog", "./cmd/relayctl")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range []string{"publisher", "projector", "catalog", "relayctl"} {
		out, err := exec.Command(filepath.Join(dir, name), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", name, err, out)
		}
		if !strings.HasPrefix(string(out), name+" "+stamp+" (") {
			t.Errorf("%s --version printed %q, want prefix %q", name, out, name+" "+stamp)
		}
	}
}
