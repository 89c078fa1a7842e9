// Package version says which build of eventrelay is running. Every binary
// prints it with --version, and the daemons report it to Kratos.
//
// `make build` and `make images` stamp Version from `git describe` with
//
//	-ldflags "-X github.com/eventrelay/eventrelay/internal/version.Version=v1.2.3"
//
// A plain `go build` leaves it empty and String falls back to "devel" plus
// the module and VCS data the toolchain embedded (runtime/debug.ReadBuildInfo;
// the repository builds with -buildvcs=false by default, so VCS data is often
// absent).
package version
