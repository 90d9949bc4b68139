package tarantool

import (
	"context"
	"fmt"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/store"
)

var _ store.CheckoutPipeliner = (*session)(nil)

// CheckoutPipeline sends every call as an asynchronous call of its stored
// procedure (allot_checkout.hold, .confirm, .cancel) on the connection,
// all before it awaits the first reply (the connector's futures), then
// decodes each reply as Hold, Confirm and Cancel decode theirs. The server
// runs each procedure as one transaction; a call whose request failed gets
// that error as its Err.
func (s *session) CheckoutPipeline(ctx context.Context, calls []store.CheckoutCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	futures := make([]*gotarantool.Future, len(calls))
	err := store.PrepareCalls(calls, func(i int, c *store.CheckoutCall) {
		args := []any{s.space, c.Hold}
		if c.Kind == store.CallHold {
			args = append(args, c.TTL.Milliseconds(), store.EncodeCart(c.Lines), groupsArg(c.Lines))
		}
		futures[i] = s.conn.Do(gotarantool.NewCallRequest("allot_checkout." + c.Kind.String()).Args(args))
	})
	if err != nil {
		// The calls sent before it are in flight: their outcome is
		// unknown, as the error says.
		return err
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		c := &calls[i]
		data, err := f.Get()
		var payload any
		if err == nil {
			payload, err = s.checkoutPayload(c.Kind.String(), data)
		}
		if err != nil {
			c.Err = fmt.Errorf("tarantool: %s %s: %w", c.Kind, c.Hold, err)
			continue
		}
		if c.Kind == store.CallHold {
			if err := s.cartReply("hold", c.Hold, payload, &c.Res); err != nil {
				c.Err = err
				continue
			}
			c.Code = c.Res.Code
			continue
		}
		code, ok := toInt64(payload)
		if !ok {
			c.Err = fmt.Errorf("tarantool: %s %s: reply %v is not a code", c.Kind, c.Hold, payload)
			continue
		}
		c.Code = store.CheckoutCode(code)
	}
	return nil
}
