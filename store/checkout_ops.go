package store

import (
	"context"
	"time"

	"allot/inventory"
)

// OpCheckout implements Checkouter and Orderer for a store that runs
// allot's own ops (the embedded engine, an allot server over RESP): each
// call is one inventory op, whose outcome maps one to one to a
// CheckoutCode. Do runs one op; its error means the outcome is unknown.
type OpCheckout struct {
	Do func(ctx context.Context, op inventory.Op) (inventory.Result, error)

	demand []inventory.Demand
}

var (
	_ Checkouter = (*OpCheckout)(nil)
	_ Orderer    = (*OpCheckout)(nil)
)

// CheckoutCodeOf maps a state machine outcome to a checkout outcome.
func CheckoutCodeOf(c inventory.Code) CheckoutCode {
	switch c {
	case inventory.CodeOK:
		return CheckoutOK
	case inventory.CodeInsufficient:
		return CheckoutInsufficient
	case inventory.CodeNotFound:
		return CheckoutNotFound
	case inventory.CodeExpired:
		return CheckoutExpired
	case inventory.CodeCancelled:
		return CheckoutCancelled
	case inventory.CodeConfirmed:
		return CheckoutConfirmed
	case inventory.CodeMismatch:
		return CheckoutMismatch
	}
	return CheckoutInvalid
}

func (o *OpCheckout) lines(lines []CartLine) []inventory.Demand {
	o.demand = o.demand[:0]
	for _, l := range lines {
		o.demand = append(o.demand, inventory.Demand{Group: l.Group, N: l.N})
	}
	return o.demand
}

func fillHoldResult(r inventory.Result, res *HoldResult) {
	res.Reset()
	res.Code = CheckoutCodeOf(r.Code)
	res.ExpiresAtMS = r.ExpiresAt
	res.Detail = r.Detail
	if r.Code == inventory.CodeInsufficient {
		res.Short, res.Available = r.ShortLine, r.Available
	}
	for _, a := range r.Allocations {
		res.Lines = append(res.Lines, HoldLine{Row: a.Row, Count: a.Count})
	}
}

// Hold implements Checkouter.
func (o *OpCheckout) Hold(ctx context.Context, hold string, ttl time.Duration, lines []CartLine, res *HoldResult) error {
	if d := CheckHold(hold, ttl, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = CheckoutInvalid, d
		return nil
	}
	r, err := o.Do(ctx, inventory.Hold(hold, ttl.Milliseconds(), o.lines(lines)))
	if err != nil {
		return err
	}
	fillHoldResult(r, res)
	return nil
}

// Confirm implements Checkouter.
func (o *OpCheckout) Confirm(ctx context.Context, hold string) (CheckoutCode, error) {
	r, err := o.Do(ctx, inventory.Confirm(hold))
	return CheckoutCodeOf(r.Code), err
}

// Cancel implements Checkouter.
func (o *OpCheckout) Cancel(ctx context.Context, hold string) (CheckoutCode, error) {
	r, err := o.Do(ctx, inventory.Cancel(hold))
	return CheckoutCodeOf(r.Code), err
}

// HoldGet implements Checkouter.
func (o *OpCheckout) HoldGet(ctx context.Context, hold string, info *HoldInfo) (bool, error) {
	r, err := o.Do(ctx, inventory.HoldGet(hold))
	if err != nil || r.Code != inventory.CodeOK {
		return false, err
	}
	info.State = r.State
	info.ExpiresAtMS = r.ExpiresAt
	info.Lines = info.Lines[:0]
	for _, a := range r.Allocations {
		info.Lines = append(info.Lines, HoldLine{Row: a.Row, Count: a.Count})
	}
	return true, nil
}

// Order implements Orderer.
func (o *OpCheckout) Order(ctx context.Context, key string, lines []CartLine, res *HoldResult) error {
	if d := CheckCart(lines); d != "" {
		res.Reset()
		res.Code, res.Detail = CheckoutInvalid, d
		return nil
	}
	op := inventory.Order(o.lines(lines))
	op.IdempotencyKey = key
	r, err := o.Do(ctx, op)
	if err != nil {
		return err
	}
	fillHoldResult(r, res)
	return nil
}
