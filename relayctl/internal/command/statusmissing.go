package command

import (
	"context"
	"fmt"
	"time"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// missingLookback bounds how far back status looks for published events a
// consumer never received (a read of the published rows of that window).
const missingLookback = 24 * time.Hour

type consumerMissing struct {
	Consumer      string    `json:"consumer"`
	Missing       int64     `json:"missing"`
	OldestMissing time.Time `json:"oldest_missing_published_at"`
}

// consumersMissing reports the inbox consumers whose read model stays
// behind: published events of their aggregate types, older than slo (and
// no older than the oldest event they still hold in their inbox), that
// they never received.
// Unlike consumers_behind it sees a consumer that receives other events
// while some keys stay stuck (an ordered key the transport stopped
// delivering, a subscription that missed a window).
func consumersMissing(ctx context.Context, q *outboxdb.Queries, slo time.Duration, rep *statusReport) error {
	rows, err := q.ConsumersMissing(ctx, outboxdb.ConsumersMissingParams{LookbackSeconds: missingLookback.Seconds(), WaitingSeconds: slo.Seconds()})
	if err != nil {
		return fmt.Errorf("looking for published events the inbox's consumers never received: %w", postgres.Classify(err))
	}
	for _, m := range rows {
		if m.Missing == 0 {
			continue
		}
		rep.Missing = append(rep.Missing, consumerMissing(m))
		rep.Problems = append(rep.Problems, fmt.Sprintf("consumer %s never received %d event(s) published %s ago or earlier (past the SLO of %s, --oldest-slo): its read model stays behind them (relayctl verify; re-drive with relayctl replay --include-published --since %s)",
			m.Consumer, m.Missing, time.Since(m.OldestMissing).Round(time.Second), slo, m.OldestMissing.UTC().Format(time.RFC3339)))
	}
	return nil
}
