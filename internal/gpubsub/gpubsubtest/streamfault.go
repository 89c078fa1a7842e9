package gpubsubtest

import (
	"context"
	"strings"
	"sync"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
)

const streamingPullMethod = "/google.pubsub.v1.Subscriber/StreamingPull"

// StreamFault fails the StreamingPull streams of chosen subscriptions on
// the client side, as a broken stream or a server error would (pstest
// runs no reactor for StreamingPull). Connect a client with Option.
type StreamFault struct {
	mu      sync.Mutex
	errs    map[string]error // subscription id -> error to fail with
	streams map[*faultStream]struct{}
}

// NewStreamFault returns a StreamFault that fails nothing yet.
func NewStreamFault() *StreamFault {
	return &StreamFault{errs: map[string]error{}, streams: map[*faultStream]struct{}{}}
}

// Option installs the fault on a client (gpubsub.NewClient's extra options).
func (f *StreamFault) Option() option.ClientOption {
	return option.WithGRPCDialOption(grpc.WithStreamInterceptor(f.intercept))
}

// Fail makes every StreamingPull stream of subscription (an id) fail with
// err: open ones at once, new ones on their first receive. Fail(id, nil)
// lets them work again.
func (f *StreamFault) Fail(subscription string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.errs, subscription)
		return
	}
	f.errs[subscription] = err
	for s := range f.streams {
		if s.subscription() == subscription {
			s.cancel()
		}
	}
}

func (f *StreamFault) errFor(subscription string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs[subscription]
}

func (f *StreamFault) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if method != streamingPullMethod {
		return streamer(ctx, desc, cc, method, opts...)
	}
	ctx, cancel := context.WithCancel(ctx)
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &faultStream{ClientStream: cs, f: f, cancel: cancel}
	f.mu.Lock()
	f.streams[s] = struct{}{}
	f.mu.Unlock()
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		delete(f.streams, s)
		f.mu.Unlock()
	}()
	return s, nil
}

// faultStream learns its subscription from the first request it sends.
type faultStream struct {
	grpc.ClientStream
	f      *StreamFault
	cancel context.CancelFunc

	mu  sync.Mutex
	sub string
}

func (s *faultStream) subscription() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sub
}

func (s *faultStream) SendMsg(m any) error {
	if r, ok := m.(*pb.StreamingPullRequest); ok && r.GetSubscription() != "" {
		s.mu.Lock()
		s.sub = r.GetSubscription()[strings.LastIndex(r.GetSubscription(), "/")+1:]
		s.mu.Unlock()
	}
	return s.ClientStream.SendMsg(m)
}

func (s *faultStream) RecvMsg(m any) error {
	if err := s.f.errFor(s.subscription()); err != nil {
		s.cancel()
		return err
	}
	err := s.ClientStream.RecvMsg(m)
	if ferr := s.f.errFor(s.subscription()); ferr != nil {
		s.cancel()
		return ferr // the message, if any, is lost to this client: redelivered after its ack deadline
	}
	return err
}
