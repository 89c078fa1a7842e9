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

	mu    sync.Mutex
	calls int  // unary calls still running upstream
	ended bool // the client's connection ended
}

// beginCall counts a unary call running upstream.
func (u *upstreamConn) beginCall() {
	u.mu.Lock()
	u.calls++
	u.mu.Unlock()
}

// endCall uncounts it, closing the connection when it was the last one of
// a client that is gone.
func (u *upstreamConn) endCall() {
	u.mu.Lock()
	u.calls--
	last := u.ended && u.calls == 0
	u.mu.Unlock()
	if last {
		u.cc.Close()
	}
}

// clientGone closes the connection once no unary call runs upstream.
func (u *upstreamConn) clientGone() {
	u.closed.Store(true)
	u.once.Do(func() {}) // none dialed: none will be
	u.mu.Lock()
	u.ended = true
	idle := u.calls == 0
	u.mu.Unlock()
	if idle && u.cc != nil {
		u.cc.Close()
	}
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
		u.clientGone()
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

// unaryCap bounds a unary call whose client set no deadline (the client
// libraries always set one).
const unaryCap = time.Minute

// upstreamContext is the context of the upstream call forwarding the
// client's call of method on ctx, and its end.
//
// A unary call (Publish, Pull, Acknowledge, ModifyAckDeadline, admin)
// carries the client's deadline, so the server ends a Pull the client gave
// up on, as on a direct connection (held open, it would lease messages
// nobody reads). A client that cancels or dies does not cancel it: the
// request reached the server, which answers it (the proxy discards the
// answer), one of the outcomes Cloud Pub/Sub has too; the client's mirrored
// upstream connection closes after its last unary call. Cancelled calls
// and connections closed under running calls are what the emulator
// (0.8.20) mishandles: its handler dies on a NoSuchMethodError and the
// publishes and ordering keys around it stall.
//
// A StreamingPull ends with the client's stream, but not with the client's
// connection: a client that dies (SIGKILL) closes its connection, and with
// it the mirrored upstream connection (see connTracker), as it would have
// closed a direct one, instead of one RST_STREAM per stream.
func upstreamContext(ctx context.Context, method string, md metadata.MD, conn *upstreamConn) (context.Context, context.CancelFunc) {
	if method != streamingPullMethod {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(unaryCap)
		}
		upCtx, cancel := context.WithDeadline(metadata.NewOutgoingContext(context.WithoutCancel(ctx), md), deadline)
		conn.beginCall()
		return upCtx, func() {
			cancel()
			conn.endCall()
		}
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
