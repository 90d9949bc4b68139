package remote

import (
	"context"
	"sync"

	"allot/store"
)

var _ store.CheckoutPipeliner = (*Session)(nil)

// pipelines keeps the buffers of OpCheckoutPipeline between calls, so that
// a session's rounds reuse them.
var pipelines = sync.Pool{New: func() any { return new(store.OpCheckoutPipeline) }}

// CheckoutPipeline sends every call as one RESP command (HOLD, CONFIRM,
// CANCEL) in one write on the session's connection and reads the replies
// in order (client.Conn.Pipeline). On an error the connection is
// discarded and the next call takes a fresh one.
func (se *Session) CheckoutPipeline(ctx context.Context, calls []store.CheckoutCall) error {
	p := pipelines.Get().(*store.OpCheckoutPipeline)
	defer pipelines.Put(p)
	p.Send = se.Pipeline
	err := p.CheckoutPipeline(ctx, calls)
	p.Send = nil
	return err
}
