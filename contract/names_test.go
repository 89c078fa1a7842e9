package contract_test

import (
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/contract"
)

func TestCheckTopicID(t *testing.T) {
	for _, ok := range []string{"orders", "a-b_c.d~e+f%20", "abc", "Z" + strings.Repeat("9", 254)} {
		if err := contract.CheckTopicID(ok); err != nil {
			t.Errorf("CheckTopicID(%q): %v", ok, err)
		}
	}
	for id, want := range map[string]string{
		"":                       "0 characters",
		"ab":                     "2 characters",
		strings.Repeat("a", 256): "256 characters",
		"1abc":                   "does not start with a letter",
		"goog.x":                 `starts with "goog"`,
		"GOOGLE-events":          `starts with "goog"`,
		"no spaces":              `has ' ' at byte 2`,
		"caf\u00e9":              "has 'é' at byte 3",
		"a\x00b":                 `has '\x00' at byte 1`,
		"a/b":                    "has '/' at byte 1",
	} {
		if err := contract.CheckTopicID(id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckTopicID(%q) = %v, want an error mentioning %q", id, err, want)
		}
	}
}

func TestIsReserved(t *testing.T) {
	for k, want := range map[string]bool{"replay_for": true, "event_id": true, "aggregate_id": true, "occurred_at": true,
		"traceparent": false, "x-tenant": false, "Replay_For": false} {
		if got := contract.IsReserved(k); got != want {
			t.Errorf("IsReserved(%q) = %t, want %t", k, got, want)
		}
	}
}
