package strict

import (
	"context"
	"sync"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

const deleteSubscriptionMethod = "/google.pubsub.v1.Subscriber/DeleteSubscription"

// deletions ends the StreamingPull streams of a subscription that is
// deleted, with NOT_FOUND, as Cloud Pub/Sub does ("Resource not found
// (resource=<id>)."): a subscriber then opens a stream on the
// subscription created again under the same name. pstest keeps such a
// stream open and silent forever, attached to the deleted subscription.
// (Deleting a topic needs no model: pstest, like the service, sets its
// subscriptions' topic to _deleted-topic_; they keep delivering their
// backlog and receive nothing from a topic re-created under the name.)
type deletions struct {
	mu      sync.Mutex
	streams map[string]map[*context.CancelCauseFunc]bool // subscription -> open streams
}

// enter reads the first message of a StreamingPull or DeleteSubscription
// call (first, forwarded as usual), or takes read when the caller read it
// already, and, for a StreamingPull, returns a context that a deletion of
// its subscription cancels, and leave to call when the stream ends.
func (d *deletions) enter(ctx context.Context, method string, ss grpc.ServerStream, read *frame) (_ context.Context, first *frame, sub string, leave func(), err error) {
	leave = func() {}
	if method != streamingPullMethod && method != deleteSubscriptionMethod {
		return ctx, read, "", leave, nil
	}
	if first = read; first == nil {
		first = new(frame)
		if err := ss.RecvMsg(first); err != nil {
			return ctx, nil, "", leave, err
		}
	}
	if method == deleteSubscriptionMethod {
		req := new(pb.DeleteSubscriptionRequest)
		if proto.Unmarshal(first.b, req) == nil {
			sub = req.GetSubscription()
		}
		return ctx, first, sub, leave, nil
	}
	req := new(pb.StreamingPullRequest)
	if proto.Unmarshal(first.b, req) != nil || req.GetSubscription() == "" {
		return ctx, first, "", leave, nil
	}
	sub = req.GetSubscription()
	ctx, cancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	if d.streams == nil {
		d.streams = map[string]map[*context.CancelCauseFunc]bool{}
	}
	if d.streams[sub] == nil {
		d.streams[sub] = map[*context.CancelCauseFunc]bool{}
	}
	d.streams[sub][&cancel] = true
	d.mu.Unlock()
	return ctx, first, sub, func() {
		d.mu.Lock()
		delete(d.streams[sub], &cancel)
		d.mu.Unlock()
		cancel(nil)
	}, nil
}

// exit is the status of a call that ended with err: a StreamingPull ended
// by the deletion of its subscription answers NOT_FOUND; a successful
// DeleteSubscription ends the subscription's open streams.
func (d *deletions) exit(ctx context.Context, method, sub string, err error) error {
	switch method {
	case streamingPullMethod:
		if cause := context.Cause(ctx); status.Code(cause) == codes.NotFound {
			return cause
		}
	case deleteSubscriptionMethod:
		if err == nil && sub != "" {
			d.mu.Lock()
			gone := status.Errorf(codes.NotFound, "Resource not found (resource=%s).", sub[lastSlash(sub)+1:])
			for cancel := range d.streams[sub] {
				(*cancel)(gone)
			}
			delete(d.streams, sub)
			d.mu.Unlock()
		}
	}
	return err
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
