package servertest

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestAudit18CloseCutsAConnectionAcceptedAsItRan: a connection the proxy
// had accepted, and whose server side it was dialing, when Close ran was
// added to the carried ones after Close cut them, and lived on: a node
// "cut off from NATS" by closing its proxies kept a connection through
// one (seen as a cut-off primary that renewed its lease on).
func TestAudit18CloseCutsAConnectionAcceptedAsItRan(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c) // an echo server
		}
	}()
	var p *CutProxy
	ready := make(chan struct{})
	p = startProxy(t, srv.Addr().String(), func(dst io.Writer, src io.Reader) error {
		_, err := io.Copy(dst, src)
		return err
	}, func() {
		<-ready
		p.Close() // Close runs between the dial and the carrying
	})
	close(ready)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		return // cut already: fine
	}
	// A carried connection echoes; a cut one ends. The deadline only
	// bounds the broken proxy's test: it echoes at once.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var b [1]byte
	if n, err := c.Read(b[:]); n > 0 || err == nil {
		t.Fatalf("a connection accepted as the proxy closed was carried on (read %q, %v)", b[:n], err)
	}
}
