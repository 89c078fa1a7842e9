package elastictest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

type connKey struct{}

// Server is an Elasticsearch test server listening on a real TCP port. It
// embeds the Handler, so Inject, InjectItem, SetLatency, Reset and Stats are
// available on it; SetDown and DownFor add connection-level outages: the
// listener is closed (new connections are refused) and open connections are
// closed, then the same address is listened on again.
type Server struct {
	*Handler
	URL  string // "http://127.0.0.1:port"
	Addr string // "127.0.0.1:port"

	mu     sync.Mutex
	srv    *http.Server
	ln     net.Listener
	conns  map[net.Conn]struct{}
	down   bool
	timer  *time.Timer
	closed bool
}

// New starts a server on 127.0.0.1 with a free port. It panics if it
// cannot listen, like httptest.NewServer. Close it when done.
func New(opts Options) *Server {
	s, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		panic(fmt.Sprintf("estest: %v", err))
	}
	return s
}

// Listen starts a server on addr (e.g. "127.0.0.1:9200").
func Listen(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := &Server{Handler: NewHandler(opts), Addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	s.URL = "http://" + s.Addr
	s.Handler.downer = s
	s.srv = &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: s.trackConn,
	}
	s.serve(ln)
	return s, nil
}

func (s *Server) trackConn(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		if s.down || s.closed {
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

func (s *Server) serve(ln net.Listener) {
	s.ln = ln
	go func() { _ = s.srv.Serve(ln) }()
}

// SetDown takes the server down (true) or brings it back up (false).
// Down: connections are refused and open ones are closed. Bringing it up
// listens on the same address again.
func (s *Server) SetDown(down bool) error {
	if down {
		return s.downFor(0, nil)
	}
	return s.up()
}

// DownFor takes the server down and brings it back after d.
func (s *Server) DownFor(d time.Duration) error { return s.downFor(d, nil) }

func (s *Server) downFor(d time.Duration, keep net.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("server closed")
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if d > 0 {
		s.timer = time.AfterFunc(d, func() { _ = s.up() })
	}
	if s.down {
		return nil
	}
	s.down = true
	s.ln.Close()
	for c := range s.conns {
		if c != keep {
			c.Close()
			delete(s.conns, c)
		}
	}
	return nil
}

func (s *Server) up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if !s.down || s.closed {
		return nil
	}
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger briefly after close
		if ln, err = net.Listen("tcp", s.Addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("estest: listening again on %s: %w", s.Addr, err)
	}
	s.down = false
	s.serve(ln)
	return nil
}

func (s *Server) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// Close shuts the server down for good.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	_ = s.srv.Close()
}
