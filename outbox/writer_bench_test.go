package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// BenchmarkInsertTx commits transactions of 1, 10 and 100 events. "call"
// appends them with one InsertTx call (one statement); "per-event" calls
// InsertTx once per event in the same transaction: one INSERT per event,
// as InsertTx did before it wrote several in one statement (with one
// event both are the same single-row INSERT). An op is one committed
// transaction; insert-ns/op is the part of it spent in InsertTx (without
// BEGIN and COMMIT, whose fsync dominates small transactions); events/s
// counts events.
//
//	go test -run XXX -bench BenchmarkInsertTx -benchtime 3s ./outbox/
func BenchmarkInsertTx(b *testing.B) {
	db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
	w := newWriter(b, outbox.Config{})
	ctx := context.Background()
	for _, n := range []int{1, 10, 100} {
		for _, mode := range []string{"per-event", "call"} {
			if n == 1 && mode == "per-event" {
				continue
			}
			b.Run(fmt.Sprintf("events=%d/%s", n, mode), func(b *testing.B) {
				id := uuid.NewString()
				evs := make([]outbox.Event, n)
				version := int64(0)
				var inserting time.Duration
				b.ResetTimer()
				for range b.N {
					for j := range evs {
						version++
						evs[j] = created(id, version)
					}
					err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
						start := time.Now()
						defer func() { inserting += time.Since(start) }()
						if mode == "call" {
							_, err := w.InsertTx(ctx, tx, evs...)
							return err
						}
						for _, e := range evs {
							if _, err := w.InsertTx(ctx, tx, e); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(inserting.Nanoseconds())/float64(b.N), "insert-ns/op")
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
