package command

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/eventrelay/eventrelay/relayctl/internal/scaffold"
)

const newUsage = `
new <dir> --module PATH --aggregate NAME --events A,B,C [--name NAME] [--replace DIR]

Writes a new Kratos service on eventrelay into <dir>, its own Go module:
the event contract (api/<name>/v1/events.proto and its generated Go code,
written without protoc; make generate regenerates it with protoc), the
migrations of the aggregate's table and its read model, the envelope
codec, a writer with optimistic versions, the read model's projection
with its version-guarded upsert, the HTTP API with read-your-writes,
embedded.Main, configs/pubsub.yaml, relayctl hooks (verify, migrate) and
an end-to-end test on package relaytest that passes as written.

The first event creates an aggregate, the others change one. Then:

  cd <dir> && go mod tidy && go test ./...   (TEST_DATABASE_URL: a Postgres where the user may create databases)`

func runNew(_ context.Context, c *cli, args []string) error {
	fs := newFlags(c, "new", newUsage)
	module := fs.String("module", "", "the new module's path, e.g. example.com/billing (required)")
	name := fs.String("name", "", "the service's name: binary, schema, Pub/Sub names, protobuf package (default: <dir>'s base name)")
	aggregate := fs.String("aggregate", "", "the aggregate's message name in CamelCase, e.g. Invoice (required)")
	eventList := fs.String("events", "", "event names in CamelCase, comma-separated, the creating one first, e.g. Issued,Paid,Voided (required)")
	replace := fs.String("replace", "", "replace eventrelay's module with this directory (a checkout) in the new go.mod")
	// The directory comes first on the command line; flags follow it.
	var dir string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		dir, args = args[0], args[1:]
	}
	if err := parse(fs, args, false); err != nil {
		return err
	}
	s := scaffold.Spec{Dir: dir, Module: *module, Name: *name, Aggregate: *aggregate, EventrelayVersion: eventrelayVersion()}
	if s.Name == "" && dir != "" {
		s.Name = scaffold.DefaultName(dir)
	}
	for _, e := range strings.Split(*eventList, ",") {
		if e = strings.TrimSpace(e); e != "" {
			s.Events = append(s.Events, e)
		}
	}
	if *replace != "" {
		abs, err := filepath.Abs(*replace)
		if err != nil {
			return usageErr("--replace %q: %v", *replace, err)
		}
		s.Replace = abs
	}
	files, err := scaffold.Write(s)
	if err != nil {
		return usageErr("new: %v", err)
	}
	slices.Sort(files)
	fmt.Fprintf(c.stdout, "wrote %d files of service %s (module %s) into %s:\n", len(files), s.Name, s.Module, dir)
	for _, f := range files {
		fmt.Fprintf(c.stdout, "  %s\n", f)
	}
	fmt.Fprintf(c.stdout, "next: cd %s && go mod tidy && go test ./...   (TEST_DATABASE_URL: a Postgres where the user may create databases)\n", dir)
	if s.Replace == "" && s.EventrelayVersion == develVersion {
		fmt.Fprintf(c.stdout, "this relayctl has no released version of eventrelay to require: add `replace github.com/eventrelay/eventrelay => <checkout>` to go.mod (or rerun with --replace)\n")
	}
	return nil
}

// develVersion is the version required of eventrelay when this binary
// was not built from a released module.
const develVersion = "v0.0.0-00010101000000-000000000000"

// eventrelayVersion is the version of eventrelay's module this binary was
// built from, when it was built from a released one.
func eventrelayVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return develVersion
	}
	for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		if m.Path == "github.com/eventrelay/eventrelay" && strings.HasPrefix(m.Version, "v") {
			return m.Version
		}
	}
	return develVersion
}
