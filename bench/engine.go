package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// engineApply gives evs to a Projector of the catalog's Postgres read model
// (the video_projection handler) with Projector.Deliver: the path of a
// received message without the subscription, with at most outstanding
// messages in flight as under a receiver's MaxOutstandingMessages. It
// returns the elapsed time of the delivery. The Projector's client talks
// to an in-process pstest server holding only the dead-letter topic, which
// a benchmark fixture must never reach.
func engineApply(ctx context.Context, db *DB, evs []Event, batch projector.BatchOptions, outstanding int) (time.Duration, error) {
	ps, err := newPstest(ctx, 0)
	if err != nil {
		return 0, err
	}
	defer ps.Close()
	dlq, err := ps.CreateTopic(ctx, "apply-dlq")
	if err != nil {
		return 0, err
	}
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := envelope.RegisterAll[projection.TxHandler](reg, events.Codec, catproj.NewVideos()); err != nil {
		return 0, err
	}
	p, err := projector.New(db.Pool, ps.Client, projector.Options{
		Receive: projector.ReceiveOptions{MaxOutstandingMessages: outstanding},
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		return 0, err
	}
	defer p.Stop(context.WithoutCancel(ctx)) //nolint:errcheck // nothing in flight after Deliver
	if err := p.Register(projector.Projection{Name: catproj.VideosConsumer, Subscription: "apply-direct",
		DeadLetterTopic: dlq, Tx: reg, Batching: batch}); err != nil {
		return 0, err
	}
	msgs := make([]*pubsub.Message, len(evs))
	for i := range evs {
		m := evs[i].Message()
		msgs[i] = &pubsub.Message{ID: "bench-" + strconv.Itoa(i), Data: m.Data, Attributes: m.Attributes,
			OrderingKey: m.OrderingKey, PublishTime: time.Now()}
	}
	start := time.Now()
	out, err := p.Deliver(ctx, catproj.VideosConsumer, msgs...)
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	var retried, deadLettered int
	for _, d := range out {
		switch d.Outcome {
		case projector.OutcomeRetry:
			retried++
		case projector.OutcomeDeadLettered:
			deadLettered++
		}
	}
	if retried > 0 || deadLettered > 0 {
		return 0, fmt.Errorf("projector nacked %d and dead-lettered %d of %d fixture messages", retried, deadLettered, len(msgs))
	}
	return elapsed, nil
}
