package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/inventory"
	"allot/server/servertest"
	"allot/services"
)

// slowNATS is filterNATS delaying each message the server sends by
// perMsg: a node behind it follows the log slowly.
func slowNATS(perMsg time.Duration) func(io.Writer, io.Reader) error {
	return func(c io.Writer, up io.Reader) error {
		r := bufio.NewReaderSize(up, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return err
			}
			op, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
			switch strings.ToUpper(string(op)) {
			case "INFO":
				line = bytes.ReplaceAll(line, []byte(`"connect_urls"`), []byte(`"connect_urls_"`))
			case "MSG", "HMSG":
				f := strings.Fields(string(line))
				n, err := strconv.Atoi(f[len(f)-1])
				if err != nil {
					return err
				}
				payload := make([]byte, n+2)
				if _, err := io.ReadFull(r, payload); err != nil {
					return err
				}
				line = append(line, payload...)
				time.Sleep(perMsg)
			}
			if _, err := c.Write(line); err != nil {
				return err
			}
		}
	}
}

// TestRouterReadsFollowTheLeaseNotTheAddress: the router's pool names the
// primary's address, and a pool redials a connection the server closed.
// A primary killed and started again from an empty data directory comes
// back at that address as a standby that is still catching up, and
// serves reads from what it applied so far: the router, which had not
// written since, read from it, and a read after its own acknowledged
// write did not see that write. A router must read from the node the
// lease names.
func TestRouterReadsFollowTheLeaseNotTheAddress(t *testing.T) {
	sc := newSharded(t, 1)
	s0 := sc.shards["s0"]
	s0.start("n2")
	r := sc.router("rs16", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A log of a few hundred frames for the restarted node to follow.
	for i := range 300 {
		if res, err := r.Do(ctx, inventory.Stock(rowKey(fmt.Sprintf("fill%d", i), "w1"), 1, 1), nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("stock %d: %+v %v", i, res, err)
		}
	}
	g := groupKey("rs16")
	if res, err := r.Do(ctx, inventory.Stock(g.Row("w1"), 5, 1), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	if res, err := r.Do(ctx, inventory.Available(g), nil); err != nil || res.Count != 5 {
		t.Fatalf("available: %+v %v", res, err)
	}
	old := s0.nodes[s0.primary()]
	old.kill(syscall.SIGKILL)
	now := s0.waitPrimary(old.id, 30*time.Second)
	// The router learns of the takeover from the lease's watch, which
	// moves the pool (or, when the watch has been silent for twice the
	// TTL, from reading the lease: TestRouterPoolMovesWhenTheLeaseWatchIsSilent);
	// until then a read that meets the standby at the old address is
	// refused by checkPrimary and goes to the primary
	// (TestRouterReadAfterWriteBeforeTheWatchUpdate), so the read below
	// must be right either way.
	if wait, ok := waitPoolLeaves(r, "s0", old.resp); !ok {
		t.Fatalf("%v after %s took over, the router's pool is still at %s, the old primary's address", wait, now.id, old.resp)
	}
	if err := os.RemoveAll(old.data); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, n := range services.NATSNodes {
		addr, err := services.Addr(s0.nats, n)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "nats://"+servertest.StartFilterProxy(t, addr, slowNATS(5*time.Millisecond)).Addr())
	}
	s0.start(old.id, "--cluster", strings.Join(urls, ",")) // a standby, from empty, catching up slowly
	res, err := r.Do(ctx, inventory.Available(g), nil)
	r.mu.Lock()
	addr := "none"
	if p := r.pools["s0"]; p != nil {
		addr = p.Addr()
	}
	r.mu.Unlock()
	if err != nil || res.Count != 5 {
		t.Fatalf("the router's read after its own acknowledged stock: %+v %v; want 5 (its pool is at %s; %s, the primary, at %s; %s, a standby catching up, at %s)",
			res, err, addr, now.id, now.resp, old.id, old.resp)
	}
}
