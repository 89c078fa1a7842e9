package projector

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// attachmentCheckTimeout bounds one GetSubscription of the watch.
const attachmentCheckTimeout = 10 * time.Second

// attachmentWatch reads a projection's subscription at Start and every
// interval (GetSubscription, permission pubsub.subscriptions.get): a
// subscription whose topic was deleted (topic _deleted-topic_) or that was
// detached keeps delivering its backlog and then receives nothing, not
// even from a topic re-created under the same name, while StreamingPull
// answers as if all were well. While it is detached or missing,
// projector_subscription_detached is 1 and, with a health, the readiness
// check "subscription/<projection>" fails naming it. A subscription the
// projector may not read is logged once and not reported.
type attachmentWatch struct {
	client     *pubsub.Client
	projection string
	sub        string
	interval   time.Duration
	gauge      prometheus.Gauge
	log        *slog.Logger

	mu     sync.Mutex
	state  gpubsub.Attachment // "" until known
	since  time.Time
	denied bool
}

// newAttachmentWatch watches sub of projection every interval, adding its
// readiness check to h (nil: none).
func newAttachmentWatch(client *pubsub.Client, projection, sub string, interval time.Duration, gauge prometheus.Gauge, h *health.Health, log *slog.Logger) *attachmentWatch {
	w := &attachmentWatch{client: client, projection: projection, sub: sub, interval: interval, gauge: gauge, log: log}
	if h != nil {
		h.AddCheck("subscription/"+projection, w.Check)
	}
	return w
}

// run checks now and every interval until ctx ends.
func (w *attachmentWatch) run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *attachmentWatch) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, attachmentCheckTimeout)
	state, _, err := gpubsub.CheckAttachment(cctx, w.client, w.client.Project(), w.sub, "")
	cancel()
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if errclass.Of(err) == errclass.PermissionDenied && !w.denied {
			w.denied = true
			w.log.Warn("cannot check that the projection's subscription is attached: permission pubsub.subscriptions.get denied (grant roles/pubsub.viewer on it)",
				"projection", w.projection, "subscription", w.sub, "error", err)
		}
		return // unknown: the receiver reports Pub/Sub not answering
	}
	if state == w.state {
		return
	}
	was := w.state
	w.state, w.since = state, time.Now()
	if state.Receives() {
		w.gauge.Set(0)
		if was != "" {
			w.log.Info("the projection's subscription is attached again", "projection", w.projection, "subscription", w.sub)
		}
		return
	}
	w.gauge.Set(1)
	w.log.Error("the projection's subscription receives nothing from its topic: re-create it (relayctl pubsub ensure --recreate-detached) and re-drive what it missed",
		"projection", w.projection, "subscription", w.sub, "state", string(state))
}

// Check is the readiness check "subscription/<projection>".
func (w *attachmentWatch) Check(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state == "" || w.state.Receives() {
		return nil
	}
	return fmt.Errorf("subscription %s of projection %s is %s for %s: it receives nothing from its topic (relayctl pubsub ensure --recreate-detached)",
		w.sub, w.projection, w.state, time.Since(w.since).Round(time.Second))
}
