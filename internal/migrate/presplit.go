package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres/schemadb"
)

// The pre-split layout: before eventrelay's tables and the catalog's were
// two sets, one goose set created all of them and recorded versions 1 to
// 3 in <schema>.goose_db_version. Its version 1 created the catalog tables
// together with eventrelay's in one transaction, so all six tables are its
// fingerprint; the eventrelay set's versions 1 to 3 are the same DDL for
// eventrelay's tables.
const preSplitTable = "goose_db_version"

var preSplitTables = []string{preSplitTable, "outbox_events", "outbox_replays", "admin_audit", "inbox_events", "videos", "video_projection"}

// preSplitVersions are the versions the pre-split set could have recorded
// (0 is goose's initial row).
var preSplitVersions = []int64{0, 1, 2, 3}

// layout is what a schema holds of eventrelay's version tables.
type layout struct {
	current  bool // eventrelay_goose_db_version exists
	outbox   bool // outbox_events exists
	preSplit bool // every table of the pre-split fingerprint exists
}

func readLayout(ctx context.Context, q schemadb.DBTX, schema string) (layout, error) {
	names := append([]string{EventrelayVersionTable}, preSplitTables...)
	present, err := schemadb.New(q).PresentRelations(ctx, schemadb.PresentRelationsParams{SchemaName: schema, Names: names})
	if err != nil {
		return layout{}, fmt.Errorf("reading the tables of schema %s: %w", schema, err)
	}
	l := layout{current: slices.Contains(present, EventrelayVersionTable), outbox: slices.Contains(present, "outbox_events"), preSplit: true}
	for _, t := range preSplitTables {
		l.preSplit = l.preSplit && slices.Contains(present, t)
	}
	return l, nil
}

// refusePreSplit fails on a schema Up has not adopted yet, where the
// eventrelay version table would read as empty.
func refusePreSplit(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	l, err := readLayout(ctx, pool, schema)
	if err != nil {
		return err
	}
	if !l.current && l.preSplit {
		return fmt.Errorf("schema %s has the pre-split migration layout (%s.%s records eventrelay's and the catalog's tables): run migrate up once with this release (it renames that table to %s, nothing else changes) before status or down",
			schema, schema, preSplitTable, EventrelayVersionTable)
	}
	return nil
}

// adoptPreSplit renames the pre-split version table to eventrelay's, in
// one transaction under a lock per schema so concurrent Up calls adopt
// once. It refuses (changing nothing) when eventrelay's tables exist
// without a version table it can recognise.
func adoptPreSplit(ctx context.Context, pool *pgxpool.Pool, schema string, sets []Set) error {
	l, err := readLayout(ctx, pool, schema)
	if err != nil || l.current || !l.outbox {
		return err // adopted already, or a fresh schema
	}
	if !l.preSplit {
		return fmt.Errorf("schema %s holds outbox_events but no %s: its eventrelay tables were not created by migrations.Up (perhaps by another migration tool from migrations.SQL); keep applying them with that tool, or insert the applied versions into %s.%s by hand before running Up",
			schema, EventrelayVersionTable, schema, EventrelayVersionTable)
	}
	for _, s := range sets {
		if s.VersionTable == preSplitTable {
			return fmt.Errorf("schema %s has the pre-split eventrelay layout in %s.%s, which set %s also names as its version table: give set %s another VersionTable",
				schema, schema, preSplitTable, s.Name, s.Name)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("adopting the pre-split layout of schema %s: %w", schema, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit a no-op
	// DDL on identifiers: not expressible as a sqlc query.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", schemaLockKey(schema)); err != nil {
		return fmt.Errorf("locking schema %s for the adoption: %w", schema, err)
	}
	if l, err = readLayout(ctx, tx, schema); err != nil || l.current {
		return err // another Up adopted it meanwhile
	}
	old := pgx.Identifier{schema, preSplitTable}.Sanitize()
	rows, err := tx.Query(ctx, "SELECT DISTINCT version_id FROM "+old+" WHERE is_applied ORDER BY 1")
	if err != nil {
		return fmt.Errorf("reading %s.%s: %w", schema, preSplitTable, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("reading %s.%s: %w", schema, preSplitTable, err)
	}
	versions = slices.DeleteFunc(versions, func(v int64) bool { return v == 0 }) // goose's initial row
	var unknown []string
	for _, v := range versions {
		if !slices.Contains(preSplitVersions, v) {
			unknown = append(unknown, fmt.Sprint(v))
		}
	}
	if len(unknown) > 0 || !slices.Contains(versions, 1) {
		return fmt.Errorf("schema %s: %s.%s records versions %v, not the pre-split eventrelay set (versions 1 to 3): refusing to adopt it; if another tool owns that table, create %s.%s with the eventrelay versions applied",
			schema, schema, preSplitTable, versions, schema, EventrelayVersionTable)
	}
	var seq *string
	if err := tx.QueryRow(ctx, "SELECT pg_get_serial_sequence($1, 'id')", old).Scan(&seq); err != nil {
		return fmt.Errorf("reading the id sequence of %s.%s: %w", schema, preSplitTable, err)
	}
	stmts := []string{"ALTER TABLE " + old + " RENAME TO " + pgx.Identifier{EventrelayVersionTable}.Sanitize()}
	if seq != nil {
		stmts = append(stmts, "ALTER SEQUENCE "+*seq+" RENAME TO "+pgx.Identifier{EventrelayVersionTable + "_id_seq"}.Sanitize())
	}
	var pkey bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{schema, preSplitTable + "_pkey"}.Sanitize()).Scan(&pkey); err != nil {
		return fmt.Errorf("looking up the primary key of %s.%s: %w", schema, preSplitTable, err)
	}
	if pkey {
		stmts = append(stmts, "ALTER INDEX "+pgx.Identifier{schema, preSplitTable + "_pkey"}.Sanitize()+" RENAME TO "+pgx.Identifier{EventrelayVersionTable + "_pkey"}.Sanitize())
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("adopting the pre-split layout of schema %s (%s): %w", schema, strings.Fields(s)[0]+" "+strings.Fields(s)[1], err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("adopting the pre-split layout of schema %s: %w", schema, err)
	}
	return nil
}
