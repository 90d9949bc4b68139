package relay_test

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// publishFault is what a faultNet does to the relay's publishes.
type publishFault int32

const (
	faultNone  publishFault = iota
	faultDrop               // the publish is written, and never reaches the broker: no confirm comes
	faultFail               // the write of the publish fails: nothing reaches the broker
	faultStall              // the write blocks, as on a broker that reads no more, until the socket's deadline
)

// faultNet sits between the relay and the broker (relay.SetDial) and
// does its fault to every basic.publish the relay writes; everything else
// (handshake, declarations, heartbeats, close) passes.
//
// It finds a publish as the first frame of a write: amqp091-go writes a
// message's frames (basic.publish, header, body) into its buffer and
// flushes them at once, starting from an empty buffer, and the relay's
// messages fit in it, so that a publish is one write of its own.
type faultNet struct{ fault atomic.Int32 }

func (n *faultNet) set(f publishFault) { n.fault.Store(int32(f)) }

func (n *faultNet) dial(network, addr string) (net.Conn, error) {
	c, err := amqp.DefaultDial(5*time.Second)(network, addr)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: c, net: n, wake: make(chan struct{}), closed: make(chan struct{})}, nil
}

// isPublish reports whether p starts with a basic.publish method frame:
// frame type 1, channel (2 bytes), size (4), class 60, method 40.
func isPublish(p []byte) bool {
	return len(p) >= 11 && p[0] == 1 && binary.BigEndian.Uint32(p[7:11]) == 60<<16|40
}

type faultConn struct {
	net.Conn
	net *faultNet

	mu        sync.Mutex
	deadline  time.Time     // the write deadline
	wake      chan struct{} // closed when the deadline changes
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *faultConn) Write(p []byte) (int, error) {
	if !isPublish(p) {
		return c.Conn.Write(p)
	}
	switch publishFault(c.net.fault.Load()) {
	case faultDrop:
		return len(p), nil
	case faultFail:
		return 0, errors.New("faultNet: the publish was not written")
	case faultStall:
		return 0, c.stall()
	}
	return c.Conn.Write(p)
}

// stall blocks as a write to a socket nobody reads: until the write
// deadline passes or the connection closes.
func (c *faultConn) stall() error {
	for {
		c.mu.Lock()
		deadline, wake := c.deadline, c.wake
		c.mu.Unlock()
		var expired <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return os.ErrDeadlineExceeded
			}
			t := time.NewTimer(d)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-wake:
		case <-expired:
			return os.ErrDeadlineExceeded
		case <-c.closed:
			return net.ErrClosed
		}
	}
}

func (c *faultConn) setWriteDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	close(c.wake)
	c.wake = make(chan struct{})
}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *faultConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
