package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Set is migrations.Set.
type Set struct {
	// Name identifies the set in output and flags (relayctl migrate
	// --set NAME): a lower-case word.
	Name string
	// FS holds the set's *.sql migrations at its root.
	FS fs.FS
	// VersionTable is the goose version table of the set, created in the
	// target schema (for example "eventrelay_goose_db_version").
	VersionTable string
	// PreSplitTables names, for a service that ran eventrelay before its
	// tables had a set of their own, the tables its version 1 created in
	// that single goose set (recorded in goose_db_version): Up then adopts
	// such a schema (see Up). Leave it nil otherwise.
	PreSplitTables []string
}

// EventrelayVersionTable is the version table of eventrelay's own set
// (migrations.Eventrelay).
const EventrelayVersionTable = "eventrelay_goose_db_version"

// EventrelayNewest is the version of the newest file of eventrelay's own
// set, which the schema checks require (a test of package migrations holds
// it to the files).
const EventrelayNewest int64 = 13

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Validate reports a set that cannot be applied: an empty or upper-case
// name or version table, a missing FS, or no *.sql file. The error names
// the field.
func (s Set) Validate() error {
	if !identifier.MatchString(s.Name) {
		return fmt.Errorf("migration set name %q must be a lower-case SQL identifier", s.Name)
	}
	if !identifier.MatchString(s.VersionTable) {
		return fmt.Errorf("migration set %s: VersionTable %q must be a lower-case SQL identifier", s.Name, s.VersionTable)
	}
	if s.FS == nil {
		return fmt.Errorf("migration set %s: FS is nil", s.Name)
	}
	files, err := fs.Glob(s.FS, "*.sql")
	if err != nil {
		return fmt.Errorf("migration set %s: listing *.sql: %w", s.Name, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("migration set %s: FS holds no *.sql file at its root", s.Name)
	}
	return nil
}

// validateSets checks each set and that names and version tables are
// distinct.
func validateSets(sets []Set) error {
	if len(sets) == 0 {
		return fmt.Errorf("no migration set given")
	}
	names, tables := map[string]bool{}, map[string]bool{}
	for _, s := range sets {
		if err := s.Validate(); err != nil {
			return err
		}
		if names[s.Name] {
			return fmt.Errorf("migration set %s given twice", s.Name)
		}
		if tables[s.VersionTable] {
			return fmt.Errorf("migration set %s: version table %s is used by another set", s.Name, s.VersionTable)
		}
		names[s.Name], tables[s.VersionTable] = true, true
	}
	return nil
}

// Newest is the version of the newest migration of set (the number
// its files' names start with).
func Newest(set Set) (int64, error) {
	files, err := fs.Glob(set.FS, "*.sql")
	if err != nil {
		return 0, fmt.Errorf("migration set %s: %w", set.Name, err)
	}
	var newest int64
	for _, f := range files {
		num, _, _ := strings.Cut(path.Base(f), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration set %s: %s does not start with a version number", set.Name, f)
		}
		newest = max(newest, v)
	}
	return newest, nil
}
