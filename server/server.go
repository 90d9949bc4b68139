package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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
		s.httpListener = newLimitListener(ln, cfg.ConnectionsMax, &s.metrics.httpConnectionsRejected)
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
			ac := s.authDeadline(nc)
			c = newRESPConn(s, ac.conn(), s.nextID)
			ac.watch(c)
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
// for them, for in-flight HTTP requests and for the RESP event loop to
// return. When ctx ends first it closes what is left and returns ctx's
// error. The engine is left open.
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
	loop := s.loop
	if loop != nil {
		loop.signal() // it closes its idle connections, then returns
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
		waitLoop(loop)
		return fmt.Errorf("server: shutdown: %w", ctx.Err())
	}
	waitLoop(loop)
	if httpErr != nil {
		return fmt.Errorf("server: HTTP shutdown: %w", httpErr)
	}
	return nil
}

// waitLoop waits for the RESP event loop, if any, to return, once every
// connection is gone: nothing of the server runs after Shutdown, and the
// loop's epoll set and eventfd are closed
// (TestAudit22ShutdownWaitsForTheLoop). The loop returns at a signal that
// finds it with no connection left (it never waits for a client or the
// disk); it is signalled once more, so that the wait never rests on a
// signal having come after its last connection closed.
func waitLoop(l *respLoop) {
	if l == nil {
		return
	}
	l.signal()
	l.wait()
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

// limitListener bounds the connections accepted and still open. One more
// is accepted and answered at once with 503 naming the limit (the refused
// class: applied false, Retry-After), then closed, as RESP answers "max
// number of clients reached".
//
// Rejected: leaving it in the kernel's accept queue until a connection
// closes (what this did first). Nothing told the client why it waited: at
// the limit, idle keep-alive connections held every slot for up to
// httpIdleTimeout and new clients hung with no error. Closing an idle
// keep-alive connection to make room was the other choice: it needs the
// server's connection states and still leaves a client at the limit with
// no answer when every connection is busy.
type limitListener struct {
	net.Listener
	slots chan struct{}
	// refusing bounds the refusals being written at once, each on a
	// goroutine of its own (never the accept loop): one more is closed
	// with no answer.
	refusing chan struct{}
	refusal  []byte // the whole 503 response
	rejected *atomic.Uint64
}

// httpRefusalsMax bounds the 503 refusals in flight at once.
const httpRefusalsMax = 64

func newLimitListener(ln net.Listener, max int, rejected *atomic.Uint64) net.Listener {
	body, _ := json.Marshal(outcomeBody{Error: "unavailable", Applied: false,
		Detail: strconv.Itoa(max) + " HTTP connections are open, the limit (connections max, allot serve --connections-max): retry later"})
	refusal := fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), refusing: make(chan struct{}, httpRefusalsMax), refusal: refusal, rejected: rejected}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
		}
		l.rejected.Add(1)
		select {
		case l.refusing <- struct{}{}:
			go func() {
				defer func() { <-l.refusing }()
				l.refuse(c)
			}()
		default:
			c.Close()
		}
	}
}

// refuse answers c with the 503 and closes it, each step bounded by
// rejectWriteTimeout. It reads the request's head first: a client that
// sees an answer before it sent its request takes it for a stray (Go's
// Transport: "unsolicited response on idle HTTP channel") and reports no
// status. After the answer it reads on until the client closes, so that
// closing a socket with unread bytes (a body) does not reset the
// connection before the client read the answer.
func (l *limitListener) refuse(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(rejectWriteTimeout))
	var head []byte
	buf := make([]byte, 4096)
	for len(head) < httpHeaderBytesMax && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	c.SetDeadline(time.Now().Add(rejectWriteTimeout))
	if _, err := c.Write(l.refusal); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, httpRefusalDrainBytes))
}

// httpRefusalDrainBytes bounds what refuse reads of a refused client
// after its answer.
const httpRefusalDrainBytes = 64 << 10

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

// authConn bounds how long a RESP connection served by a goroutine
// (RESPIOGoroutine) may stay unauthenticated when a password is set
// (Config.AuthTimeout): until it authenticates, its reads carry that
// deadline from accept; past it the connection is told why (-ERR) and
// closed. Without it, clients that never authenticate could hold every
// connection slot (ConnectionsMax) for as long as they liked.
//
// It reads the connection's authed flag in Read, which only the
// connection's own goroutine calls, the one that sets the flag: no lock.
// wake (a shutdown) sets a read deadline of its own through
// SetReadDeadline, which the wrapper notes so as never to replace it.
type authConn struct {
	*net.TCPConn
	c     *respConn
	by    time.Time // the authentication deadline
	armed bool      // our deadline is set on the socket
	woken atomic.Bool
}

// authTimeoutReply is what a connection that did not authenticate within
// d is told before it is closed, in either I/O mode.
func authTimeoutReply(d time.Duration) []byte {
	return []byte("-ERR not authenticated within the auth timeout (" + d.String() + ", allot serve --auth-timeout): closing the connection\r\n")
}

// errAuthTimeout ends a connection that did not authenticate in time.
var errAuthTimeout = errors.New("server: not authenticated within the auth timeout")

// authDeadline wraps nc when the server needs a password and nc is a TCP
// connection; otherwise conn returns nc as it is.
func (s *Server) authDeadline(nc net.Conn) authDeadlineConn {
	tc, ok := nc.(*net.TCPConn)
	if !ok || s.cfg.Password == "" {
		return authDeadlineConn{nc: nc}
	}
	tc.SetNoDelay(true) // what newRESPConn does for a bare *net.TCPConn
	return authDeadlineConn{nc: nc, ac: &authConn{TCPConn: tc, by: time.Now().Add(s.cfg.AuthTimeout)}}
}

// authDeadlineConn is authDeadline's result: the connection to serve, and
// the wrapper (nil when none) to tell which respConn it serves.
type authDeadlineConn struct {
	nc net.Conn
	ac *authConn
}

func (a authDeadlineConn) conn() net.Conn {
	if a.ac != nil {
		return a.ac
	}
	return a.nc
}

// watch tells the wrapper the connection it serves, before the
// connection's goroutine starts.
func (a authDeadlineConn) watch(c *respConn) {
	if a.ac != nil {
		a.ac.c = c
	}
}

// SetReadDeadline is the connection's own deadline (wake): noted, so that
// Read never replaces it with the authentication deadline.
func (a *authConn) SetReadDeadline(t time.Time) error {
	a.woken.Store(true)
	return a.TCPConn.SetReadDeadline(t)
}

// setDeadline sets a read deadline of the wrapper's; a wake that came
// meanwhile wins (it stores woken before it sets its deadline).
func (a *authConn) setDeadline(t time.Time) {
	a.TCPConn.SetReadDeadline(t)
	if a.woken.Load() {
		a.TCPConn.SetReadDeadline(time.Now())
	}
}

func (a *authConn) Read(b []byte) (int, error) {
	if a.c.authed {
		if a.armed {
			a.armed = false
			a.setDeadline(time.Time{})
		}
		return a.TCPConn.Read(b)
	}
	if !a.armed {
		a.armed = true
		a.setDeadline(a.by)
	}
	n, err := a.TCPConn.Read(b)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !a.woken.Load() && !time.Now().Before(a.by) {
		a.TCPConn.SetWriteDeadline(time.Now().Add(rejectWriteTimeout))
		a.TCPConn.Write(authTimeoutReply(a.c.s.cfg.AuthTimeout))
		return n, errAuthTimeout
	}
	return n, err
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
