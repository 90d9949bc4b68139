package servertest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// CutProxy forwards TCP connections to a server and can cut every one it
// carries, as a network failure or a server restart would.
type CutProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool // Close was called: a connection accepted before it is cut too
	// dialed, when set (tests), runs after a connection's server side is
	// dialed and before the proxy carries it.
	dialed func()
}

// StartCutProxy listens on a loopback port and forwards each connection
// to target; the test's cleanup closes it and cuts what it carries.
func StartCutProxy(t testing.TB, target string) *CutProxy {
	t.Helper()
	return StartFilterProxy(t, target, func(dst io.Writer, src io.Reader) error {
		_, err := io.Copy(dst, src)
		return err
	})
}

// StartFilterProxy is StartCutProxy with what the server sends passed
// through down (from the server's side, src, to the client's, dst) until
// it returns: a test's rewriting of the server's replies.
func StartFilterProxy(t testing.TB, target string, down func(dst io.Writer, src io.Reader) error) *CutProxy {
	t.Helper()
	return startProxy(t, target, down, nil)
}

// startProxy is StartFilterProxy with CutProxy.dialed set to dialed.
func startProxy(t testing.TB, target string, down func(dst io.Writer, src io.Reader) error, dialed func()) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, dialed: dialed}
	t.Cleanup(p.Close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if p.dialed != nil {
				p.dialed()
			}
			p.mu.Lock()
			if p.closed {
				// Accepted as Close ran: cut like the rest.
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { down(c, up); c.Close() }()
		}
	}()
	return p
}

// Addr is the address clients connect to.
func (p *CutProxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection the proxy carries; new ones are forwarded.
func (p *CutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Close closes the listener and cuts every connection, as a node that
// died would.
func (p *CutProxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.Cut()
}
