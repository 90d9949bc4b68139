package remote

import (
	"context"
	"errors"
	"sync"
	"time"

	"allot/client"
	"allot/inventory"
)

// shared is the store's shared connection (Options.Shared): a Batcher on a
// client of one connection. On a cluster it follows the primary as a
// Session does: a "not primary" refusal moves it to the node named, and a
// primary that cannot be reached sends it back to the node the store was
// opened at.
type shared struct {
	mu      sync.Mutex
	cfg     client.Config // the store's client settings; Addr is the seed
	start   string        // where the connection is first made
	timeout time.Duration
	addr    string // where c and b are connected
	c       *client.Client
	b       *client.Batcher
	closed  bool // by the store's Close: no connection is made again
}

// get returns the current batcher and its address, made on first use.
func (sh *shared) get() (*client.Batcher, string, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return nil, "", client.ErrClosed
	}
	if sh.b == nil {
		if err := sh.openLocked(sh.start); err != nil {
			return nil, "", err
		}
	}
	return sh.b, sh.addr, nil
}

// startAt sets where the connection is first made: the primary a Load
// found. A connection already made stays where it is.
func (sh *shared) startAt(addr string) {
	sh.mu.Lock()
	sh.start = addr
	sh.mu.Unlock()
}

func (sh *shared) openLocked(addr string) error {
	cfg := sh.cfg
	cfg.Addr, cfg.PoolSize = addr, 1
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	sh.c, sh.b, sh.addr = c, client.NewBatcher(c, sh.timeout), addr
	return nil
}

// move replaces the batcher from, which a caller found refused or
// unreachable, with one at addr; when another caller replaced from
// already, it leaves the new one. The old batcher finishes its queued
// calls and closes in the background.
func (sh *shared) move(from *client.Batcher, addr string) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.b != from || sh.addr == addr || sh.closed {
		return nil
	}
	oldC, oldB := sh.c, sh.b
	if err := sh.openLocked(addr); err != nil {
		return err
	}
	go func() {
		oldB.Close()
		oldC.Close()
	}()
	return nil
}

func (sh *shared) close() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.closed = true
	if sh.b != nil {
		sh.b.Close()
		sh.c.Close()
		sh.b, sh.c = nil, nil
	}
}

// do runs op through the shared connection, following the primary: a
// refusal naming it (the op was not applied) sends it there, as
// client.Client.Do does; a connection that cannot be made goes back to
// the seed after a growing pause.
func (sh *shared) do(ctx context.Context, op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	for hop := 0; ; hop++ {
		b, at, err := sh.get()
		if err != nil {
			return inventory.Result{}, err
		}
		r, err := b.Do(ctx, op, lines)
		if err == nil {
			return r, nil
		}
		next, ok := client.NextPrimary(ctx, err, hop, at)
		if !ok && errors.Is(err, client.ErrConnect) && at != sh.cfg.Addr && hop < client.RetriesMax && client.WaitRetry(ctx, hop) {
			next, ok = sh.cfg.Addr, true
		}
		if !ok {
			return r, err
		}
		if err := sh.move(b, next); err != nil {
			return r, err
		}
	}
}
