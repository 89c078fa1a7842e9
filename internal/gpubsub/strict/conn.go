package strict

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// connGoneWait is how long a cancelled call waits to learn whether its
// client's whole connection went away (then the upstream connection closes
// instead of the call being cancelled).
const connGoneWait = 200 * time.Millisecond

// upstreamConn mirrors one client connection: the calls of that client go
// to the server on a connection of their own, closed when the client's
// closes, as a direct connection would be.
type upstreamConn struct {
	once   sync.Once
	cc     *grpc.ClientConn
	err    error
	closed atomic.Bool
}

type connKey struct{}

// connTracker gives every client connection an upstreamConn and closes it
// when the client's connection ends.
type connTracker struct{}

func (connTracker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, &upstreamConn{})
}

func (connTracker) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, end := s.(*stats.ConnEnd); !end {
		return
	}
	if u, ok := ctx.Value(connKey{}).(*upstreamConn); ok {
		u.closed.Store(true)
		u.once.Do(func() {}) // none dialed: none will be
		if u.cc != nil {
			u.cc.Close()
		}
	}
}

func (connTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTracker) HandleRPC(context.Context, stats.RPCStats)                       {}

// upstreamFor returns the upstream connection of the client connection of
// ctx, dialing it on first use.
func (p *Proxy) upstreamFor(ctx context.Context) (*upstreamConn, error) {
	u, ok := ctx.Value(connKey{}).(*upstreamConn)
	if !ok {
		return nil, fmt.Errorf("no connection state")
	}
	u.once.Do(func() {
		u.cc, u.err = grpc.NewClient(p.upstream,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			// The server behind may be restarted (fault suites): reconnect
			// within a second, not after gRPC's default backoff of minutes.
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
				BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second,
			}, MinConnectTimeout: 5 * time.Second}),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxFrame), grpc.MaxCallSendMsgSize(maxFrame)))
	})
	if u.err != nil {
		return nil, u.err
	}
	if u.cc == nil {
		return nil, fmt.Errorf("client connection closed")
	}
	return u, nil
}

// upstreamContext is the context of the upstream call forwarding the
// client's call of method on ctx.
//
// A unary call (Pull, Acknowledge, ModifyAckDeadline, Publish, admin)
// carries the client's deadline and ends when the client's call ends, as a
// direct call would: a Pull the client gave up on must not stay open
// upstream, where it would lease messages nobody reads.
//
// A StreamingPull ends with the client's stream, but not with the client's
// connection: a client that dies (SIGKILL) closes its connection, and with
// it the mirrored upstream connection (see connTracker), as it would have
// closed a direct one. Cancelling each stream instead would send the server
// one RST_STREAM per stream, which the emulator (0.8.20) mishandles: it
// then holds those ordering keys back.
func upstreamContext(ctx context.Context, method string, md metadata.MD, conn *upstreamConn) (context.Context, context.CancelFunc) {
	if method != streamingPullMethod {
		return context.WithCancel(metadata.NewOutgoingContext(ctx, md))
	}
	upCtx, upCancel := context.WithCancel(metadata.NewOutgoingContext(context.WithoutCancel(ctx), md))
	cancelUnlessConnGone := func() {
		if ctx.Err() != nil {
			time.Sleep(connGoneWait)
			if conn.closed.Load() {
				return // the upstream connection's close ends the stream
			}
		}
		upCancel()
	}
	stop := context.AfterFunc(ctx, cancelUnlessConnGone)
	return upCtx, func() {
		stop()
		cancelUnlessConnGone()
	}
}
