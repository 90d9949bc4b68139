package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"allot/engine"
)

// Server serves one engine over RESP and HTTP.
//
// Lifecycle: New binds the listeners (so that the bound addresses are known
// at once, port 0 included), Serve accepts until Shutdown, and Shutdown
// stops accepting, lets every connection finish the commands it has
// received, and returns. The engine belongs to the caller: Shutdown does not
// close it, so that the caller closes it after the last reply is out and the
// journal is durable before the process exits.
type Server struct {
	cfg    Config
	engine *engine.Engine

	respListener net.Listener
	httpListener net.Listener
	httpServer   *http.Server

	mu       sync.Mutex
	loop     *respLoop // Config.RESPIO "loop": made by serveRESP
	conns    map[*respConn]struct{}
	closing  bool
	connWG   sync.WaitGroup
	nextID   int64
	serveWG  sync.WaitGroup
	shutdown chan struct{}

	metrics metrics
	changes changesFeed // the change stream, made on first use (changes.go)
	// changeSlots holds a token per change-stream reader being served
	// (Config.ChangeStreamsMax, changes.go).
	changeSlots chan struct{}
}

// New validates cfg and binds its addresses. The server does not accept
// connections until Serve.
func New(cfg Config, e *engine.Engine) (*Server, error) {
	if e == nil {
		return nil, errors.New("server: no engine")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, engine: e, conns: map[*respConn]struct{}{}, shutdown: make(chan struct{}),
		changeSlots: make(chan struct{}, cfg.ChangeStreamsMax)}
	if cfg.RESPAddr != "" {
		ln, err := net.Listen("tcp", cfg.RESPAddr)
		if err != nil {
			return nil, fmt.Errorf("server: RESP listen on %s: %w", cfg.RESPAddr, err)
		}
		s.respListener = ln
	}
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			if s.respListener != nil {
				s.respListener.Close()
			}
			return nil, fmt.Errorf("server: HTTP listen on %s: %w", cfg.HTTPAddr, err)
		}
		s.httpListener = newLimitListener(ln, cfg.ConnectionsMax)
		s.httpServer = &http.Server{
			Handler:           s.httpHandler(),
			ReadHeaderTimeout: httpHeaderTimeout,
			ReadTimeout:       httpReadTimeout,
			WriteTimeout:      httpWriteTimeout,
			IdleTimeout:       httpIdleTimeout,
			MaxHeaderBytes:    httpHeaderBytesMax,
		}
	}
	return s, nil
}

// RESPAddr returns the bound RESP address, or "" when RESP is disabled.
func (s *Server) RESPAddr() string {
	if s.respListener == nil {
		return ""
	}
	return s.respListener.Addr().String()
}

// HTTPAddr returns the bound HTTP address, or "" when HTTP is disabled.
func (s *Server) HTTPAddr() string {
	if s.httpListener == nil {
		return ""
	}
	return s.httpListener.Addr().String()
}

// RESPIO returns how RESP connections are served (Config.RESPIO, its
// default resolved): RESPIOLoop or RESPIOGoroutine.
func (s *Server) RESPIO() string { return s.cfg.RESPIO }

// Serve accepts connections until Shutdown. It returns nil after Shutdown,
// or the first listener failure.
func (s *Server) Serve() error {
	errs := make(chan error, 2)
	n := 0
	if s.respListener != nil {
		n++
		go func() { errs <- s.serveRESP() }()
	}
	if s.httpListener != nil {
		n++
		go func() {
			err := s.httpServer.Serve(s.httpListener)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *Server) serveRESP() error {
	var loop *respLoop
	if s.cfg.RESPIO == RESPIOLoop {
		l, err := newRESPLoop(s)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			l.close()
			return nil
		}
		s.loop = l
		s.mu.Unlock()
		go l.run()
		loop = l
	}
	for {
		nc, err := s.respListener.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: say so, wait a little,
			// go on; the listener is still good.
			s.cfg.Logger.Error("server: RESP accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		if len(s.conns) >= s.cfg.ConnectionsMax {
			s.mu.Unlock()
			s.metrics.connectionsRejected.Add(1)
			nc.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
			continue
		}
		s.nextID++
		var c *respConn
		if loop != nil {
			fd, err := adoptFD(nc)
			if err != nil {
				s.mu.Unlock()
				nc.Close()
				s.cfg.Logger.Error("server: RESP connection not taken", "err", err)
				continue
			}
			c = newLoopConn(s, loop, fd, s.nextID)
		} else {
			c = newRESPConn(s, nc, s.nextID)
		}
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		s.metrics.connectionsAccepted.Add(1)
		s.metrics.connections.Add(1)
		if loop != nil {
			loop.add(c)
			continue
		}
		go func() {
			c.serve()
			s.connGone(c, nil)
		}()
	}
}

// connGone takes a closed connection out of the server: out of conns,
// with end (when not nil) run under the same lock, then counted.
func (s *Server) connGone(c *respConn, end func()) {
	s.mu.Lock()
	delete(s.conns, c)
	if end != nil {
		end()
	}
	s.mu.Unlock()
	s.metrics.connections.Add(-1)
	s.connWG.Done()
}

// Shutdown stops accepting, wakes every idle connection, lets connections
// finish the commands they have already read (replies included), and waits
// for them and for in-flight HTTP requests. When ctx ends first it closes
// what is left and returns ctx's error. The engine is left open.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.shutdown)
	if s.respListener != nil {
		s.respListener.Close()
	}
	for c := range s.conns {
		c.wake()
	}
	if s.loop != nil {
		s.loop.signal() // it closes its idle connections, then returns
	}
	s.mu.Unlock()

	var httpErr error
	if s.httpServer != nil {
		httpErr = s.httpServer.Shutdown(ctx)
		// Shutdown closes only the listeners Serve was given: close ours in
		// case Serve never ran.
		s.httpListener.Close()
	}
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.abort()
		}
		s.mu.Unlock()
		<-done
		return fmt.Errorf("server: shutdown: %w", ctx.Err())
	}
	if httpErr != nil {
		return fmt.Errorf("server: HTTP shutdown: %w", httpErr)
	}
	return nil
}

// HTTP bounds: a client that trickles its request or never reads the
// response cannot hold a connection for longer than these.
const (
	httpHeaderTimeout  = 10 * time.Second
	httpReadTimeout    = 30 * time.Second
	httpWriteTimeout   = 30 * time.Second
	httpIdleTimeout    = 2 * time.Minute
	httpHeaderBytesMax = 16 << 10
)

// limitListener bounds the connections accepted and still open: Accept
// waits while max are open, so further clients wait in the kernel's accept
// queue rather than each costing a goroutine and buffers.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, max int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and wakes an Accept waiting for a free slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// closingNow reports whether Shutdown has begun.
func (s *Server) closingNow() bool {
	select {
	case <-s.shutdown:
		return true
	default:
		return false
	}
}
