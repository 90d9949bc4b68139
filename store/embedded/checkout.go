package embedded

import (
	"context"

	"allot/inventory"
	"allot/store"
)

// checkoutSession gives a session holds and orders: each call is one op
// on the engine (store.OpCheckout); CheckoutPipeline submits a batch of
// them before waiting for the first (session.Pipeline), so that they share
// journal writes and syncs.
type checkoutSession struct {
	*session
	store.OpCheckout
	pipe store.OpCheckoutPipeline
}

var (
	_ store.Checkouter        = (*checkoutSession)(nil)
	_ store.Orderer           = (*checkoutSession)(nil)
	_ store.CheckoutPipeliner = (*checkoutSession)(nil)
)

func newCheckoutSession(s *session) *checkoutSession {
	cs := &checkoutSession{session: s, OpCheckout: store.OpCheckout{
		Do: func(_ context.Context, op inventory.Op) (inventory.Result, error) { return s.eng.Do(op, nil) },
	}}
	cs.pipe.Send = s.Pipeline
	return cs
}

// CheckoutPipeline implements store.CheckoutPipeliner.
func (cs *checkoutSession) CheckoutPipeline(ctx context.Context, calls []store.CheckoutCall) error {
	return cs.pipe.CheckoutPipeline(ctx, calls)
}
