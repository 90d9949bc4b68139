package remote

import (
	"context"

	"allot/inventory"
	"allot/store"
)

var (
	_ store.Checkouter = (*Session)(nil)
	_ store.Orderer    = (*Session)(nil)
	_ store.Checkouter = (*sharedSession)(nil)
)

// do runs one op on the session's connection: what store.OpCheckout
// sends holds, confirms, cancels and orders through.
func (se *Session) do(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	return se.op(ctx, op, nil)
}

// do runs one op through the shared connection.
func (se *sharedSession) do(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	r, err := se.store.sh.do(ctx, op, nil)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}
