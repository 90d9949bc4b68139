package client

import (
	"context"
	"errors"
	"strings"
)

// notPrimaryPrefix starts a standby's refusal of a mutation (cluster
// package): "UNAVAILABLE not primary, primary at ADDR", or "... primary
// unknown" while it does not know the primary.
const notPrimaryPrefix = "UNAVAILABLE not primary, primary at "

// PrimaryOf returns the primary's address named by a standby's refusal,
// and whether err is one.
func PrimaryOf(err error) (addr string, ok bool) {
	var se *ServerError
	if !errors.As(err, &se) || !strings.HasPrefix(se.Msg, notPrimaryPrefix) {
		return "", false
	}
	addr = strings.TrimSpace(strings.TrimPrefix(se.Msg, notPrimaryPrefix))
	return addr, addr != ""
}

// PrimaryNamed returns the primary a standby named in refusing err's
// request, or one op of its pipeline (a *PipelineRefusal): where the next
// request goes. Unlike PrimaryOf it says nothing of what was applied.
func PrimaryNamed(err error) (addr string, ok bool) {
	if addr, ok := PrimaryOf(err); ok {
		return addr, true
	}
	var pr *PipelineRefusal
	if errors.As(err, &pr) {
		return PrimaryOf(pr.Refusal)
	}
	return "", false
}

// NextPrimary says where a mutation goes after err, the hop-th (from 0)
// reply to it, from the node at addr: the primary a "not primary"
// refusal names (the mutation was not applied). The first hop goes at
// once, unless the node names itself; each further one (a failover under
// way: the node named refuses too) waits a growing pause first, up to
// RetriesMax hops. It reports false when err is no such refusal, the hops
// are spent, or ctx ended while it waited.
func NextPrimary(ctx context.Context, err error, hop int, addr string) (string, bool) {
	primary, ok := PrimaryOf(err)
	if !ok || hop >= RetriesMax {
		return "", false
	}
	if (hop > 0 || primary == addr) && !WaitRetry(ctx, hop) {
		return "", false
	}
	return primary, true
}

// primaryClient returns a pool for the primary at addr, with this
// client's settings: the one kept from the last redirect when it is
// there, else a new one (the old one is closed).
func (c *Client) primaryClient(addr string) (*Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.primary != nil && c.primary.cfg.Addr == addr {
		return c.primary, nil
	}
	cfg := c.cfg
	cfg.Addr = addr
	pc, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if c.primary != nil {
		c.primary.Close()
	}
	c.primary = pc
	return pc, nil
}

// redirected returns the pool c sends mutations to: the one kept from
// the last redirect, or c itself.
func (c *Client) redirected() *Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.primary != nil && !c.closed {
		return c.primary
	}
	return c
}
