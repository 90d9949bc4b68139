package client_test

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
)

// TestSearchIsRetriedAfterALostReply: a search is a read, so Client.Do
// retries it when its reply is lost, as it retries Get and Available; it
// returned the lost connection's error instead.
func TestSearchIsRetriedAfterALostReply(t *testing.T) {
	var requests atomic.Int32
	ln := listen(t, func(nc net.Conn) {
		defer nc.Close()
		words := make(chan string, 1)
		go respCommands(bufio.NewReader(nc), words)
		for {
			select {
			case <-words:
			case <-time.After(5 * time.Second):
				return
			}
			if requests.Add(1) == 1 {
				return // the request arrived; its reply never does
			}
			nc.Write([]byte("*0\r\n"))
		}
	})
	c := newClient(t, ln.Addr().String(), client.Config{})
	res, err := c.Do(context.Background(), inventory.Search(catalog.Query{Prefix: "red"}), nil)
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("a search whose first reply was lost (%d requests): %+v, %v; want it retried", requests.Load(), res, err)
	}
	if requests.Load() != 2 {
		t.Fatalf("%d requests, want 2", requests.Load())
	}
}
