package migrate

import (
	"bufio"
	"fmt"
	"io/fs"
	"strings"
)

// SQL is migrations.SQL.
func SQL(set Set) (string, error) {
	if err := set.Validate(); err != nil {
		return "", err
	}
	files, err := fs.Glob(set.FS, "*.sql")
	if err != nil {
		return "", fmt.Errorf("listing the files of set %s: %w", set.Name, err)
	}
	// fs.Glob returns names sorted; goose's NNNNN_ prefixes sort in
	// version order.
	var b strings.Builder
	fmt.Fprintf(&b, "-- Migration set %q as plain SQL (generated from its goose files; goose records it in %s).\n", set.Name, set.VersionTable)
	b.WriteString("-- Unqualified names: run with search_path set to the target schema.\n")
	for _, f := range files {
		text, err := fs.ReadFile(set.FS, f)
		if err != nil {
			return "", fmt.Errorf("reading %s of set %s: %w", f, set.Name, err)
		}
		up, tx, err := upSection(string(text))
		if err != nil {
			return "", fmt.Errorf("set %s, %s: %w", set.Name, f, err)
		}
		how := "goose runs this file in one transaction"
		if !tx {
			how = "goose runs this file outside a transaction, statement by statement"
		}
		fmt.Fprintf(&b, "\n-- ==== %s (%s)\n", f, how)
		b.WriteString(strings.TrimSpace(up))
		b.WriteString("\n")
	}
	return b.String(), nil
}

// upSection returns a goose file's text up to its -- +goose Down, without
// the goose annotations, and whether goose wraps it in a transaction.
func upSection(text string) (up string, tx bool, err error) {
	tx = true
	var b strings.Builder
	sawUp := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		ann, ok := strings.CutPrefix(strings.TrimSpace(line), "-- +goose ")
		if !ok {
			b.WriteString(line)
			b.WriteString("\n")
			continue
		}
		switch strings.ToUpper(strings.TrimSpace(ann)) {
		case "UP":
			sawUp = true
		case "DOWN":
			if !sawUp {
				return "", false, fmt.Errorf("-- +goose Down before -- +goose Up")
			}
			return b.String(), tx, nil
		case "NO TRANSACTION":
			tx = false
		case "STATEMENTBEGIN", "STATEMENTEND":
		default:
			return "", false, fmt.Errorf("goose annotation %q is not supported as plain SQL", strings.TrimSpace(line))
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	if !sawUp {
		return "", false, fmt.Errorf("no -- +goose Up annotation")
	}
	return b.String(), tx, nil
}
