package tarantool

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/inventory"
	"allot/store"
)

// Checkout the way a Tarantool shop does it (store.Checkouter,
// store.Orderer): stored procedures in checkout.lua over two spaces of the
// rows space's engine (holds by id, order keys by key), each call one
// transaction on the server, and an expiry fiber on the server that wakes
// every SweepInterval and expires due holds by the server's clock. See
// checkout.lua for the layout.

//go:embed checkout.lua
var checkoutSource string

// PrepareCheckout defines the checkout functions, creates (or empties) the
// holds and keys spaces and (re)starts the expiry fiber; stop stops it.
func (s *Store) PrepareCheckout(ctx context.Context, cfg store.CheckoutConfig) (func() error, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := s.conn.Do(gotarantool.NewEvalRequest(checkoutSource).Context(ctx)).Get(); err != nil {
		return nil, fmt.Errorf("tarantool: defining the checkout functions: %w", err)
	}
	space := s.engine.space
	for _, call := range []*gotarantool.CallRequest{
		gotarantool.NewCallRequest("allot_checkout.setup").Args([]any{space}),
		gotarantool.NewCallRequest("allot_checkout.start_expiry").Args([]any{space, cfg.SweepInterval.Seconds(), cfg.SweepBatch}),
	} {
		if _, err := s.conn.Do(call.Context(ctx)).Get(); err != nil {
			return nil, fmt.Errorf("tarantool: preparing checkout on %s: %w", space, err)
		}
	}
	return func() error {
		_, err := s.conn.Do(gotarantool.NewCallRequest("allot_checkout.stop_expiry").Args([]any{space})).Get()
		if err != nil {
			return fmt.Errorf("tarantool: stopping the expiry fiber: %w", err)
		}
		return nil
	}, nil
}

// callCheckout runs allot_checkout.<function> and returns the first two
// values of its {payload, conflicts} reply.
func (s *session) callCheckout(ctx context.Context, function string, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := s.conn.Do(gotarantool.NewCallRequest("allot_checkout." + function).Args(args)).Get()
	if err != nil {
		return nil, err
	}
	return s.checkoutPayload(function, data)
}

// checkoutPayload returns the payload of a checkout function's {payload,
// conflicts} reply and counts its conflicts.
func (s *session) checkoutPayload(function string, data []any) (any, error) {
	if len(data) != 1 {
		return nil, fmt.Errorf("%s replied %d values, want 1", function, len(data))
	}
	reply, ok := data[0].([]any)
	if !ok || len(reply) != 2 {
		return nil, fmt.Errorf("%s replied %v, want {payload, conflicts}", function, data[0])
	}
	if c, ok := toInt64(reply[1]); ok {
		s.conflicts += c
	}
	return reply[0], nil
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int:
		return int64(x), true
	}
	return 0, false
}

// groupsArg is a cart's summed groups as checkout.lua takes them.
func groupsArg(lines []store.CartLine) []any {
	demand := store.SumCart(lines, nil)
	out := make([]any, len(demand))
	for i, d := range demand {
		out[i] = []any{d.Group.SKU, d.Group.Condition, d.Group.Source, d.N, d.First}
	}
	return out
}

func (s *session) cartReply(what, id string, payload any, res *store.HoldResult) error {
	text, ok := payload.(string)
	if !ok {
		return fmt.Errorf("tarantool: %s %s: reply %v is not text", what, id, payload)
	}
	if text == "M" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutMismatch, what+" "+id+" was used with other lines"
		return nil
	}
	if err := store.DecodeReply(text, res); err != nil {
		return fmt.Errorf("tarantool: %s %s: %w", what, id, err)
	}
	return nil
}

// Hold calls allot_checkout.hold.
func (s *session) Hold(ctx context.Context, hold string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckHold(hold, ttl, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	payload, err := s.callCheckout(ctx, "hold", []any{s.space, hold, ttl.Milliseconds(), store.EncodeCart(lines), groupsArg(lines)})
	if err != nil {
		return fmt.Errorf("tarantool: hold %s: %w", hold, err)
	}
	return s.cartReply("hold", hold, payload, res)
}

// Order calls allot_checkout.order.
func (s *session) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckOrder(key, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	payload, err := s.callCheckout(ctx, "order", []any{s.space, key, store.EncodeCart(lines), groupsArg(lines)})
	if err != nil {
		return fmt.Errorf("tarantool: order %s: %w", key, err)
	}
	return s.cartReply("order", key, payload, res)
}

func (s *session) finish(ctx context.Context, what, hold string) (store.CheckoutCode, error) {
	if d := inventory.CheckID(hold); d != "" {
		return store.CheckoutInvalid, nil
	}
	payload, err := s.callCheckout(ctx, what, []any{s.space, hold})
	if err != nil {
		return 0, fmt.Errorf("tarantool: %s %s: %w", what, hold, err)
	}
	code, ok := toInt64(payload)
	if !ok {
		return 0, fmt.Errorf("tarantool: %s %s: reply %v is not a code", what, hold, payload)
	}
	return store.CheckoutCode(code), nil
}

// Confirm calls allot_checkout.confirm.
func (s *session) Confirm(ctx context.Context, hold string) (store.CheckoutCode, error) {
	return s.finish(ctx, "confirm", hold)
}

// Cancel calls allot_checkout.cancel.
func (s *session) Cancel(ctx context.Context, hold string) (store.CheckoutCode, error) {
	return s.finish(ctx, "cancel", hold)
}

// HoldGet calls allot_checkout.hold_get. A hold past its deadline that the
// fiber has not reached yet is still held.
func (s *session) HoldGet(ctx context.Context, hold string, info *store.HoldInfo) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	data, err := s.conn.Do(gotarantool.NewCallRequest("allot_checkout.hold_get").Args([]any{s.space, hold})).Get()
	if err != nil {
		return false, fmt.Errorf("tarantool: hold.get %s: %w", hold, err)
	}
	if len(data) != 1 {
		return false, fmt.Errorf("tarantool: hold.get %s: reply %v, want one value", hold, data)
	}
	reply, ok := data[0].([]any)
	if !ok || len(reply) != 2 {
		return false, fmt.Errorf("tarantool: hold.get %s: reply %v", hold, data)
	}
	state, ok1 := toInt64(reply[0])
	text, ok2 := reply[1].(string)
	if !ok1 || !ok2 {
		return false, fmt.Errorf("tarantool: hold.get %s: reply %v", hold, reply)
	}
	if state == 0 {
		return false, nil
	}
	var res store.HoldResult
	res.Lines = info.Lines[:0]
	if err := store.DecodeReply(text, &res); err != nil {
		return false, fmt.Errorf("tarantool: hold.get %s: %w", hold, err)
	}
	info.State, info.ExpiresAtMS, info.Lines = store.HoldState(state), res.ExpiresAtMS, res.Lines
	return true, nil
}

var (
	_ store.Checkouter       = (*session)(nil)
	_ store.Orderer          = (*session)(nil)
	_ store.CheckoutPreparer = (*Store)(nil)
)
