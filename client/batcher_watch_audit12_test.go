package client

import (
	"context"
	"testing"
	"time"

	"allot/inventory"
)

// TestBatcherIgnoresAnEarlierUsersContext: a pooled connection keeps the
// context watch of its last user (a worker passes the same context call
// after call). The Batcher took such a connection and wrote and read it
// directly, so when that earlier caller's context ended, its watch set a
// past deadline on the Batcher's socket: the pipeline on the wire failed
// (outcome unknown) and the connection was dropped, for a context that
// was none of the Batcher's callers'.
func TestBatcherIgnoresAnEarlierUsersContext(t *testing.T) {
	addr := respServer(t, func(n int64) string {
		if n > 1 {
			time.Sleep(300 * time.Millisecond) // the Batcher's request is on the wire meanwhile
		}
		return ":5\r\n"
	})
	c, err := New(Config{Addr: addr, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	earlier, cancelEarlier := context.WithCancel(context.Background())
	defer cancelEarlier()
	if _, err := c.Available(earlier, auditGroup); err != nil {
		t.Fatal(err)
	}
	b := NewBatcher(c, 5*time.Second)
	defer b.Close()
	type reply struct {
		res inventory.Result
		err error
	}
	done := make(chan reply, 1)
	go func() {
		res, err := b.Do(context.Background(), inventory.Available(auditGroup), nil)
		done <- reply{res, err}
	}()
	time.Sleep(100 * time.Millisecond)
	cancelEarlier() // the earlier caller is done with its context
	r := <-done
	if r.err != nil || r.res.Count != 5 {
		t.Fatalf("the batcher's call when an earlier user's context ended: %+v, %v; want its reply", r.res, r.err)
	}
}
