package server

import (
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// An op is on /metrics once its reply is out: a client that got its reply
// and then read allot_ops_total did not always find its op there, since
// the connection added its round's counts after writing the replies (the
// direct reply after its write too). TestAudit22CheckoutOutcomesAreNotErrors
// failed so in a CI run. Here each path's write is made to linger after
// it wrote, so that the counts come late unless they come first.
func TestAudit23OpCountedBeforeItsReply(t *testing.T) {
	const lag = 300 * time.Millisecond
	t.Run("direct reply", func(t *testing.T) {
		saved := directWrite
		directWrite = func(c *respConn, b []byte) (int, error) {
			n, err := writeNow(c, b)
			time.Sleep(lag)
			return n, err
		}
		t.Cleanup(func() { directWrite = saved }) // after the server's cleanup
		s, _ := loopServer(t, engine.DurabilityFsync)
		stockAndCount(t, s)
	})
	t.Run("round on the loop", func(t *testing.T) {
		saved := loopWrite
		loopWrite = func(fd int, b []byte) (int, error) {
			n, err := writeFDNow(fd, b)
			time.Sleep(lag)
			return n, err
		}
		t.Cleanup(func() { loopWrite = saved })
		s, _ := loopServer(t, engine.DurabilityWrite)
		stockAndCount(t, s)
	})
}

// stockAndCount sends a STOCK.SET, reads its reply and checks that the
// server counted it by then.
func stockAndCount(t *testing.T, s *Server) {
	t.Helper()
	nc, br := dialRESP(t, s)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte("STOCK.SET s w c o 10 1\r\n")); err != nil {
		t.Fatal(err)
	}
	reply, err := readRESP(br)
	if err != nil {
		t.Fatal(err)
	}
	counted := s.metrics.ops[protocolRESP][kindSlot(inventory.KindStock)][resultOf(inventory.CodeOK)].Load()
	if counted != 1 {
		t.Fatalf("reply %q came, and allot_ops_total{op=\"stock\",result=\"ok\"} was %d, want 1", reply, counted)
	}
}
