package embedded

import (
	"context"

	"allot/inventory"
	"allot/store"
)

// checkoutSession gives a session holds and orders: each call is one op
// on the engine (store.OpCheckout).
type checkoutSession struct {
	*session
	store.OpCheckout
}

var (
	_ store.Checkouter = (*checkoutSession)(nil)
	_ store.Orderer    = (*checkoutSession)(nil)
)

func newCheckoutSession(s *session) *checkoutSession {
	return &checkoutSession{session: s, OpCheckout: store.OpCheckout{
		Do: func(_ context.Context, op inventory.Op) (inventory.Result, error) { return s.eng.Do(op, nil) },
	}}
}
