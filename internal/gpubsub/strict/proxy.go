package strict

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/contract"
)

// RTTEnv names the variable that sets the round trip of the doubles that
// the suites, the demo and the benchmark start ("15ms"; unset or "0": none).
const RTTEnv = "PUBSUB_DOUBLE_RTT"

// RTTFromEnv reads RTTEnv; an invalid value is an error naming it.
func RTTFromEnv() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(RTTEnv))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 15ms", RTTEnv, v)
	}
	return d, nil
}

const (
	publishMethod       = "/google.pubsub.v1.Publisher/Publish"
	streamingPullMethod = "/google.pubsub.v1.Subscriber/StreamingPull"
)

// maxFrame bounds the frames the proxy passes in either direction; the
// rules, not the transport, refuse oversize Publish requests.
const maxFrame = 64 << 20

// Options configure a Proxy.
type Options struct {
	// Upstream is the emulator's or pstest's host:port (required).
	Upstream string
	// Addr is the listen address (default 127.0.0.1:0, a free port).
	Addr string
	// RTT is added to every call: half on the way to the server, half on
	// the way back, per message of a stream (a latency, not a throughput
	// limit).
	RTT time.Duration
	// IAM, when set, is enforced on the clients of ListenAs addresses.
	IAM *IAM
}

// Proxy is a running strict double. Close stops it.
type Proxy struct {
	lis      net.Listener
	srv      *grpc.Server
	upstream string
	rtt      time.Duration
	iam      *IAM

	mu      sync.Mutex
	stats   Stats
	members map[string]string // listen address -> IAM member (ListenAs)
	denials []Denial

	deleted deletions // streams of deleted subscriptions end with NOT_FOUND
}

// MinBillableBytes is what Cloud Pub/Sub bills at least per Publish
// request: "A minimum of 1000 bytes per publish, push or pull request is
// assessed regardless of message size".
const MinBillableBytes = 1000

// Stats counts what the double saw.
type Stats struct {
	PublishRequests int64
	PublishMessages int64
	// PublishBytes is the messages' size as Pub/Sub counts it (data,
	// attributes, ordering key); BillableBytes counts each request as
	// at least MinBillableBytes, as Cloud Pub/Sub bills it. Both count
	// only the requests passed upstream: a refused one is not billed, and
	// the requests its messages are sent again in are.
	PublishBytes  int64
	BillableBytes int64
	Refused       int64
	ByRule        map[Rule]int64
	// Examples holds the first refusals, for the report of a failing run.
	Examples []string
}

const maxExamples = 5

// Start listens on o.Addr and forwards to o.Upstream.
func Start(o Options) (*Proxy, error) {
	if o.Upstream == "" {
		return nil, errors.New("strict pubsub double: upstream address is required")
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.IAM != nil {
		if err := o.IAM.Validate(); err != nil {
			return nil, fmt.Errorf("strict pubsub double: IAM: %w", err)
		}
	}
	lis, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("strict pubsub double: listening on %s: %w", o.Addr, err)
	}
	p := &Proxy{lis: lis, upstream: o.Upstream, rtt: o.RTT, iam: o.IAM, stats: Stats{ByRule: map[Rule]int64{}}, members: map[string]string{}}
	p.srv = grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(p.handle),
		grpc.StatsHandler(connTracker{}),
		grpc.MaxRecvMsgSize(maxFrame), grpc.MaxSendMsgSize(maxFrame))
	go p.srv.Serve(lis) //nolint:errcheck // ends with Close
	return p, nil
}

// Addr is the host:port clients use as PUBSUB_EMULATOR_HOST.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

// RTT is the round trip the proxy adds.
func (p *Proxy) RTT() time.Duration { return p.rtt }

// Close stops serving: open calls end and every upstream connection
// closes.
func (p *Proxy) Close() { p.srv.Stop() }

// Stats returns a copy of the counts.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByRule = make(map[Rule]int64, len(p.stats.ByRule))
	for k, v := range p.stats.ByRule {
		s.ByRule[k] = v
	}
	s.Examples = append([]string(nil), p.stats.Examples...)
	return s
}

// String summarizes s in one line.
func (s Stats) String() string {
	line := fmt.Sprintf("%d Publish request(s) with %d message(s), %d refused", s.PublishRequests, s.PublishMessages, s.Refused)
	for rule, n := range s.ByRule {
		line += fmt.Sprintf(", %s: %d", rule, n)
	}
	if len(s.Examples) > 0 {
		line += "; first: " + strings.Join(s.Examples, " | ")
	}
	return line
}

// handle forwards one call of any method; under IAM the caller's
// permissions are checked first, then Publish requests' rules: refused
// calls never reach upstream.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "strict pubsub double: no method in stream")
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()

	var first *frame
	member, identified := p.memberOf(ctx)
	if method == publishMethod || p.iam != nil {
		first = new(frame)
		if err := ss.RecvMsg(first); err != nil {
			return err
		}
	}
	if err := p.authorize(member, identified, method, first.bytes()); err != nil {
		sleepCtx(ctx, p.rtt)
		return err
	}
	if method == publishMethod {
		if err := p.checkPublish(first); err != nil {
			sleepCtx(ctx, p.rtt) // a refusal also takes a round trip
			return err
		}
	}
	// The call's first message, when IAM or the Publish check read it
	// already, is the one the deletion check reads.
	ctx, first, sub, leave, err := p.deleted.enter(ctx, method, ss, first)
	if err != nil {
		return err
	}
	defer leave()

	conn, err := p.upstreamFor(ctx)
	if err != nil {
		return status.Errorf(codes.Unavailable, "strict pubsub double: %v", err)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for k, v := range md {
		if !strings.HasPrefix(k, ":") && k != "content-type" && k != "user-agent" {
			out[k] = v
		}
	}
	upCtx, upCancel := upstreamContext(ctx, method, out, conn)
	defer upCancel()
	cs, err := conn.cc.NewStream(upCtx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}

	go p.clientToServer(upCtx, ss, cs, first) //nolint:errcheck // the server's answer ends the call
	return p.deleted.exit(ctx, method, sub, p.serverToClient(upCtx, ss, cs, method != streamingPullMethod))
}

func (p *Proxy) checkPublish(f *frame) error {
	req := new(pb.PublishRequest)
	if err := proto.Unmarshal(f.b, req); err != nil {
		return status.Errorf(codes.InvalidArgument, "Invalid PublishRequest: %v", err)
	}
	r := CheckPublish(req)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.PublishRequests++
	p.stats.PublishMessages += int64(len(req.GetMessages()))
	if r == nil {
		var size int64
		for _, m := range req.GetMessages() {
			size += int64(contract.MessageSize(m.GetData(), m.GetAttributes(), m.GetOrderingKey()))
		}
		p.stats.PublishBytes += size
		p.stats.BillableBytes += max(size, MinBillableBytes)
		return nil
	}
	p.stats.Refused++
	p.stats.ByRule[r.Rule]++
	if len(p.stats.Examples) < maxExamples {
		p.stats.Examples = append(p.stats.Examples, fmt.Sprintf("%s (%d messages to %s): %v", r.Rule, len(req.GetMessages()), req.GetTopic(), r.Err))
	}
	return r.Err
}

// clientToServer forwards the client's messages (first, if set, was read
// already), each delayed by half the round trip.
func (p *Proxy) clientToServer(ctx context.Context, ss grpc.ServerStream, cs grpc.ClientStream, first *frame) error {
	return pump(ctx, p.rtt/2, func() (*frame, error) {
		if first != nil {
			f := first
			first = nil
			return f, nil
		}
		f := new(frame)
		return f, ss.RecvMsg(f)
	}, cs.SendMsg, cs.CloseSend)
}

// serverToClient forwards the server's header, messages (each delayed by
// half the round trip) and trailer; it returns the call's status. With
// toTheEnd, a client gone does not end it: the server's answer is read to
// its end and discarded (see upstreamContext).
func (p *Proxy) serverToClient(ctx context.Context, ss grpc.ServerStream, cs grpc.ClientStream, toTheEnd bool) error {
	var clientErr error
	headerSent := false
	sendHeader := func() {
		if headerSent {
			return
		}
		headerSent = true
		if md, err := cs.Header(); err == nil && len(md) > 0 {
			ss.SendHeader(md) //nolint:errcheck // the call's status tells
		}
	}
	var callErr error
	err := pump(ctx, p.rtt/2, func() (*frame, error) {
		f := new(frame)
		err := cs.RecvMsg(f)
		if err != nil && err != io.EOF {
			callErr = err
		}
		return f, err
	}, func(m any) error {
		if clientErr != nil {
			return nil // discarded
		}
		sendHeader()
		if err := ss.SendMsg(m); err != nil {
			clientErr = err
			if !toTheEnd {
				return err
			}
		}
		return nil
	}, func() error { return nil })
	sendHeader()
	ss.SetTrailer(cs.Trailer())
	switch {
	case clientErr != nil:
		return clientErr
	case callErr != nil:
		return callErr
	}
	return err
}

type delayed struct {
	f   *frame
	err error // io.EOF: the end of the stream
	due time.Time
}

// pump moves frames from recv to send, each no earlier than delay after
// it was read, in order; at recv's io.EOF it calls done. It returns the
// first error other than io.EOF.
func pump(ctx context.Context, delay time.Duration, recv func() (*frame, error), send func(any) error, done func() error) error {
	if delay <= 0 {
		for {
			f, err := recv()
			if err == io.EOF {
				return done()
			}
			if err != nil {
				return err
			}
			if err := send(f); err != nil {
				return err
			}
		}
	}
	// The reader stamps each frame, and the end of the stream, with the
	// time it may go on; the writer keeps that order and pace.
	queue := make(chan delayed, 256)
	go func() {
		defer close(queue)
		for {
			f, err := recv()
			d := delayed{f: f, err: err, due: time.Now().Add(delay)}
			select {
			case queue <- d:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for d := range queue {
		if !sleepCtx(ctx, time.Until(d.due)) {
			return ctx.Err()
		}
		switch {
		case d.err == io.EOF:
			return done()
		case d.err != nil:
			return d.err
		}
		if err := send(d.f); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// frame is one message as bytes: the proxy forwards without decoding.
type frame struct{ b []byte }

func (f *frame) bytes() []byte {
	if f == nil {
		return nil
	}
	return f.b
}

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("strict pubsub double: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("strict pubsub double: cannot unmarshal into %T", v)
	}
	f.b = append(f.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
