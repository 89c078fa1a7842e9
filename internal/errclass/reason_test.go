package errclass

import (
	"context"
	"errors"
	"fmt"
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
