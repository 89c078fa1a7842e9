package e2e

import (
	"fmt"
	"io"
	"strings"
)

// Table is a two- or three-column text table: name, value and, for
// assertions, PASS/FAIL.
type Table struct {
	rows  [][3]string
	fails int
}

// Row adds an informational row.
func (t *Table) Row(name, value string) { t.rows = append(t.rows, [3]string{name, value, ""}) }

// Check adds an asserted row.
func (t *Table) Check(name, value string, ok bool) {
	st := "PASS"
	if !ok {
		st = "FAIL"
		t.fails++
	}
	t.rows = append(t.rows, [3]string{name, value, st})
}

// Failed counts the failed checks.
func (t *Table) Failed() int { return t.fails }

// FailedChecks lists the failed checks as "name: value", values uncut.
func (t *Table) FailedChecks() []string {
	var out []string
	for _, r := range t.rows {
		if r[2] == "FAIL" {
			out = append(out, r[0]+": "+r[1])
		}
	}
	return out
}

// maxValue bounds the value column; longer values are cut with "...".
const maxValue = 110

// Print writes the table, values cut at maxValue.
func (t *Table) Print(w io.Writer) {
	wn, wv := 0, 0
	for _, r := range t.rows {
		wn, wv = max(wn, len(r[0])), max(wv, len(cut(r[1], maxValue)))
	}
	line := "  +" + strings.Repeat("-", wn+2) + "+" + strings.Repeat("-", wv+2) + "+"
	fmt.Fprintln(w, line)
	for _, r := range t.rows {
		fmt.Fprintf(w, "  | %-*s | %-*s | %s\n", wn, r[0], wv, cut(r[1], maxValue), r[2])
	}
	fmt.Fprintln(w, line)
}
