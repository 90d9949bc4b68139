package client

import (
	"context"
	"time"

	"allot/inventory"
)

// readCheckout reads the reply to a hold, order, hold-get, confirm or
// cancel whose first line is line (not an error).
func (cn *Conn) readCheckout(op *inventory.Op, line []byte, r *inventory.Result) error {
	k := op.Kind
	switch k {
	case inventory.KindConfirm, inventory.KindCancel:
		if string(line) != "+OK" {
			return unexpected(k.String(), line)
		}
		r.Code = inventory.CodeOK
		return nil
	case inventory.KindHold:
		if string(line) != "*2" {
			return unexpected("HOLD", line)
		}
		at, err := cn.integer("HOLD")
		if err != nil {
			return err
		}
		r.ExpiresAt = at
		if line, err = cn.line(); err != nil {
			return err
		}
	case inventory.KindHoldGet:
		if string(line) == "*-1" {
			r.Code = inventory.CodeNotFound
			return nil
		}
		if string(line) != "*3" {
			return unexpected("HOLD.GET", line)
		}
		l, err := cn.line()
		if err != nil {
			return err
		}
		st, err := cn.bulk(l)
		if err != nil {
			return err
		}
		switch string(st) {
		case "held":
			r.State = inventory.HoldHeld
		case "confirmed":
			r.State = inventory.HoldConfirmed
		case "cancelled":
			r.State = inventory.HoldCancelled
		case "expired":
			r.State = inventory.HoldExpired
		default:
			return unexpected("HOLD.GET", st)
		}
		if r.ExpiresAt, err = cn.integer("HOLD.GET"); err != nil {
			return err
		}
		if line, err = cn.line(); err != nil {
			return err
		}
	}
	n, ok := header(line, '*')
	if !ok || n < 1 {
		return unexpected(k.String(), line)
	}
	r.Allocations = r.Allocations[:0]
	for range n {
		l, err := cn.line()
		if err != nil {
			return err
		}
		if string(l) != "*5" {
			return unexpected(k.String(), l)
		}
		var a inventory.Allocation
		for _, p := range []*string{&a.Row.SKU, &a.Row.Warehouse, &a.Row.Condition, &a.Row.Source} {
			if l, err = cn.line(); err != nil {
				return err
			}
			b, err := cn.bulk(l)
			if err != nil {
				return err
			}
			*p = cn.internBytes(b)
		}
		if a.Count, err = cn.integer(k.String()); err != nil {
			return err
		}
		r.Allocations = append(r.Allocations, a)
	}
	r.Code = inventory.CodeOK
	return nil
}

// Hold reserves lines under hold id for ttl (whole milliseconds). See
// DESIGN.md "Checkout": on CodeOK, Result.ExpiresAt and Allocations; on
// CodeInsufficient, Result.ShortLine and Available.
func (c *Client) Hold(ctx context.Context, id string, ttl time.Duration, lines []inventory.Demand) (inventory.Result, error) {
	return c.Do(ctx, inventory.Hold(id, ttl.Milliseconds(), lines), nil)
}

// Confirm confirms hold id.
func (c *Client) Confirm(ctx context.Context, id string) (inventory.Result, error) {
	return c.Do(ctx, inventory.Confirm(id), nil)
}

// Cancel cancels hold id.
func (c *Client) Cancel(ctx context.Context, id string) (inventory.Result, error) {
	return c.Do(ctx, inventory.Cancel(id), nil)
}

// HoldGet reads hold id: CodeOK with State, ExpiresAt and Allocations, or
// CodeNotFound.
func (c *Client) HoldGet(ctx context.Context, id string) (inventory.Result, error) {
	return c.Do(ctx, inventory.HoldGet(id), nil)
}

// Order captures lines all or nothing; key, when not empty, is its
// idempotency key (and makes a lost reply safe to retry).
func (c *Client) Order(ctx context.Context, key string, lines []inventory.Demand) (inventory.Result, error) {
	op := inventory.Order(lines)
	op.IdempotencyKey = key
	return c.Do(ctx, op, nil)
}
