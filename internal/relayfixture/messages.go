package relayfixture

import (
	"strconv"
	"testing"

	"cloud.google.com/go/pubsub/v2/pstest"
)

// Delivery is what a pstest server received, grouped by ordering key.
type Delivery struct {
	// Versions per ordering key, in the order the server accepted them.
	Versions map[string][]int64
	// Copies per event id.
	Copies map[string]int
	// Total messages.
	Total int
}

// Collect groups msgs; every message must carry the standard attributes.
func Collect(t testing.TB, msgs []*pstest.Message) Delivery {
	t.Helper()
	d := Delivery{Versions: map[string][]int64{}, Copies: map[string]int{}, Total: len(msgs)}
	for _, m := range msgs {
		for _, k := range []string{"event_id", "aggregate_type", "aggregate_id", "event_type", "version", "schema_version", "occurred_at"} {
			if m.Attributes[k] == "" {
				t.Fatalf("message %s has no %s attribute: %v", m.ID, k, m.Attributes)
			}
		}
		v, err := strconv.ParseInt(m.Attributes["version"], 10, 64)
		if err != nil {
			t.Fatalf("message %s: version attribute %q: %v", m.ID, m.Attributes["version"], err)
		}
		if m.OrderingKey != m.Attributes["aggregate_id"] {
			t.Fatalf("message %s: ordering key %q, aggregate_id %q", m.ID, m.OrderingKey, m.Attributes["aggregate_id"])
		}
		d.Versions[m.OrderingKey] = append(d.Versions[m.OrderingKey], v)
		d.Copies[m.Attributes["event_id"]]++
	}
	return d
}

// RequireExactlyOnceInOrder fails unless every key received versions
// 1..versions exactly once, strictly increasing, over keys keys.
func (d Delivery) RequireExactlyOnceInOrder(t testing.TB, keys, versions int) {
	t.Helper()
	if len(d.Versions) != keys {
		t.Fatalf("messages for %d ordering keys, want %d", len(d.Versions), keys)
	}
	for id, n := range d.Copies {
		if n != 1 {
			t.Fatalf("event %s published %d times, want once", id, n)
		}
	}
	for k, vs := range d.Versions {
		if len(vs) != versions {
			t.Fatalf("key %s: %d messages, want %d: %v", k, len(vs), versions, vs)
		}
		for i, v := range vs {
			if v != int64(i+1) {
				t.Fatalf("key %s: versions out of order at position %d: %v", k, i, vs)
			}
		}
	}
}

// RequireFirstSeenInOrder fails unless, per key, the versions in order of
// first appearance are exactly 1..versions (duplicates allowed: crashes
// republish). It returns the number of duplicate messages.
func (d Delivery) RequireFirstSeenInOrder(t testing.TB, keys, versions int) int {
	t.Helper()
	if len(d.Versions) != keys {
		t.Fatalf("messages for %d ordering keys, want %d", len(d.Versions), keys)
	}
	dups := 0
	for k, vs := range d.Versions {
		seen := map[int64]bool{}
		var first []int64
		for _, v := range vs {
			if seen[v] {
				dups++
				continue
			}
			seen[v] = true
			first = append(first, v)
		}
		if len(first) != versions {
			t.Fatalf("key %s: %d distinct versions, want %d: %v", k, len(first), versions, vs)
		}
		for i, v := range first {
			if v != int64(i+1) {
				t.Fatalf("key %s: first-seen versions out of order at position %d: %v (all: %v)", k, i, first, vs)
			}
		}
	}
	return dups
}
