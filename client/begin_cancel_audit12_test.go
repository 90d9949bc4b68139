package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"allot/inventory"
)

// cancelInBegin is a connection whose first SetDeadline to a time that is
// not the watch's (begin applying the caller's deadline) first cancels
// the caller's context and waits a moment for the watch to set its past
// deadline: a cancellation arriving between begin's check of the context
// and its setting of the deadline.
type cancelInBegin struct {
	net.Conn
	cancel context.CancelFunc
	fired  chan struct{} // the watch set its past deadline
	once   sync.Once
}

func (w *cancelInBegin) SetDeadline(t time.Time) error {
	if !t.IsZero() && t.Before(time.Unix(2, 0)) { // the watch's
		err := w.Conn.SetDeadline(t)
		select {
		case w.fired <- struct{}{}:
		default:
		}
		return err
	}
	w.once.Do(func() {
		w.cancel()
		select {
		case <-w.fired:
		case <-time.After(200 * time.Millisecond):
		}
	})
	return w.Conn.SetDeadline(t)
}

// TestCancelInsideBeginIsNotLost: begin registered the watch, then set
// the socket's deadline to the caller's; a cancellation between the two
// set a past deadline that begin's then overwrote, and the request waited
// for a reply until the caller's deadline.
func TestCancelInsideBeginIsNotLost(t *testing.T) {
	c, err := New(Config{Addr: stalledServer(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cn, err := c.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cn.nc = &cancelInBegin{Conn: cn.nc, cancel: cancel, fired: make(chan struct{}, 1)}
	start := time.Now()
	_, err = cn.Do(ctx, inventory.Available(auditGroup), nil)
	waited := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v: want it to say the context was cancelled", err)
	}
	if waited > time.Second {
		t.Fatalf("the request returned %v after it began: the cancellation was lost, it waited for its deadline", waited)
	}
}
