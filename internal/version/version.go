package version

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
)

// Version is stamped at link time (see the package doc). Empty means unstamped.
var Version string

// Get returns the stamped version, or "devel" for an unstamped build.
func Get() string {
	if Version != "" {
		return Version
	}
	return "devel"
}

// String is the one-line --version output of program, e.g.
// "publisher v0.3.0 (go1.26.8, linux/amd64)" or, unstamped,
// "publisher devel (go1.26.8, linux/amd64, vcs git 1a2b3c4d5e6f dirty)".
func String(program string) string {
	info, _ := debug.ReadBuildInfo()
	return format(program, Version, info)
}

// format builds String's line from a possibly nil build info.
func format(program, stamped string, info *debug.BuildInfo) string {
	v := stamped
	if v == "" {
		v = "devel"
	}
	var details []string
	if info != nil {
		details = append(details, info.GoVersion)
		s := settings(info)
		if s["GOOS"] != "" {
			details = append(details, s["GOOS"]+"/"+s["GOARCH"])
		}
		if stamped == "" {
			if rev := s["vcs.revision"]; rev != "" {
				vcs := "vcs " + s["vcs"] + " " + rev[:min(12, len(rev))]
				if s["vcs.modified"] == "true" {
					vcs += " dirty"
				}
				details = append(details, vcs)
			} else if m := info.Main.Version; m != "" && m != "(devel)" {
				details = append(details, "module "+m)
			}
		}
	}
	if len(details) == 0 {
		return program + " " + v
	}
	return fmt.Sprintf("%s %s (%s)", program, v, strings.Join(details, ", "))
}

func settings(info *debug.BuildInfo) map[string]string {
	m := make(map[string]string, len(info.Settings))
	for _, s := range info.Settings {
		m[s.Key] = s.Value
	}
	return m
}

// Flag registers --version on flag.CommandLine. Pass its value, after
// flag.Parse, to ExitIfRequested.
func Flag() *bool {
	return flag.Bool("version", false, "print the version and exit")
}

// ExitIfRequested prints String(program) and exits 0 when requested is true.
func ExitIfRequested(program string, requested bool) {
	if requested {
		fmt.Println(String(program))
		os.Exit(0)
	}
}
