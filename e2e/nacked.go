package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// nackLine is the projector's log line for a message it nacked after a
// transient failure (settleFailed).
type nackLine struct {
	Time       time.Time `json:"time"`
	Message    string    `json:"message"`
	Projection string    `json:"projection"`
	EventID    string    `json:"event_id"`
}

// lastNacks reads the projector's log and returns, for projection, when
// each event was last nacked.
func lastNacks(path, projection string) (map[string]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	last := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if !bytes.Contains(b, []byte("will be redelivered")) {
			continue
		}
		var l nackLine
		if json.Unmarshal(b, &l) != nil || l.Projection != projection || l.EventID == "" {
			continue
		}
		if l.Time.After(last[l.EventID]) {
			last[l.EventID] = l.Time
		}
	}
	return last, sc.Err()
}

// NackedNotRedelivered tells whether every key consumer is behind on
// waits behind a message the projector nacked (a transient failure,
// logged) longer than quiet ago and never got back: the emulator did not
// redeliver a nacked message of an ordered key, which Cloud Pub/Sub does
// within the subscription's maximum backoff. Only the earliest unapplied
// event of each key is looked at: the later ones wait behind it. Any
// other state (a key whose first unapplied event the projector never
// nacked, or nacked recently) is not this defect.
func (s *Stack) NackedNotRedelivered(ctx context.Context, consumer string, quiet time.Duration) (string, bool) {
	rows, _, err := s.Stats.Unapplied(ctx, consumer, 100000)
	if err != nil {
		return err.Error(), false
	}
	first := map[string]int{} // aggregate -> index of its earliest unapplied row
	for i, r := range rows {
		if r.Status != "published" {
			return fmt.Sprintf("%s: event %s is %s, not published", consumer, r.EventID, r.Status), false
		}
		if j, ok := first[r.AggregateID]; !ok || r.AggregateVersion < rows[j].AggregateVersion {
			first[r.AggregateID] = i
		}
	}
	if len(first) == 0 {
		return consumer + ": nothing unapplied", false
	}
	nacks, err := lastNacks(s.Projector.LogPath(), projectionOf[consumer])
	if err != nil {
		return fmt.Sprintf("reading the projector's log: %v", err), false
	}
	var oldest time.Time
	for _, i := range first {
		r := rows[i]
		at, ok := nacks[r.EventID.String()]
		if !ok {
			return fmt.Sprintf("%s: event %s (%s v%d) was never nacked by the projector", consumer, r.EventID, r.AggregateID, r.AggregateVersion), false
		}
		if since := time.Since(at); since < quiet {
			return fmt.Sprintf("%s: event %s was nacked %s ago, less than %s", consumer, r.EventID, since.Round(time.Second), quiet), false
		}
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	return fmt.Sprintf("%s: each of the %d keys behind waits on a message the projector nacked (transient failure) and the emulator never redelivered (the first nack %s ago)",
		consumer, len(first), time.Since(oldest).Round(time.Second)), true
}
