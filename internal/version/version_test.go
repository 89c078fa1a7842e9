package version

import (
	"runtime/debug"
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
	got := format("relayctl", "", info)
	if want := "relayctl devel (go1.26.8, vcs git 0123456789ab dirty)"; got != want {
		t.Fatalf("format = %q, want %q", got, want)
	}
	if got := format("relayctl", "", nil); got != "relayctl devel" {
		t.Fatalf("format without build info = %q", got)
	}
}
