package errclass

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name      string
		err       error
		want      Reason
		transient bool
	}{
		{"classified", New(PayloadInvalid, base), PayloadInvalid, false},
		{"wrapped once per layer", fmt.Errorf("publishing: %w", New(Unavailable, base)), Unavailable, true},
		{"outermost wins", New(MessageTooLarge, New(Unavailable, base)), MessageTooLarge, false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), Timeout, true},
		{"unclassified is unknown and retried", base, Unknown, true},
		{"a missing grant is retried, never the event's fault", New(PermissionDenied, base), PermissionDenied, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Of(c.err); got != c.want {
				t.Fatalf("Of = %q, want %q", got, c.want)
			}
			if got := IsTransient(c.err); got != c.transient {
				t.Fatalf("IsTransient = %v, want %v", got, c.transient)
			}
			if !errors.Is(c.err, base) && c.want != Timeout {
				t.Fatalf("chain lost the cause")
			}
		})
	}
	if New(Unavailable, nil) != nil {
		t.Fatal("New(nil) must be nil")
	}
	for _, r := range All {
		if !r.Valid() {
			t.Fatalf("%q not valid", r)
		}
	}
}

// The runbook's reason table names every reason, so an operator who meets
// one in a metric label or an error_reason finds what it means.
func TestRunbookListsEveryReason(t *testing.T) {
	b, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "### Error reasons")
	if !ok {
		t.Fatal(`docs/runbook.md has no "### Error reasons" section`)
	}
	table, _, _ = strings.Cut(table, "\n### ")
	for _, r := range All {
		if !strings.Contains(table, "`"+string(r)+"`") {
			t.Errorf("docs/runbook.md, Error reasons: %s is missing", r)
		}
	}
}
