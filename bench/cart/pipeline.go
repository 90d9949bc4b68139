package cart

import (
	"context"
	"fmt"
	"time"

	"allot/store"
)

// The pipelined checkout loop (--pipeline N > 1, store.CheckoutPipeliner):
// a checkout service batching its customers. Each round a worker sends, in
// one store.CheckoutPipeline call, the HOLDs of up to N new carts together
// with the next call of every cart still under way from earlier rounds
// (its CONFIRM or CANCEL as the cart decided, a repeat after a simulated
// timeout, or the retry of a call whose outcome was unknown), and waits
// for every reply before the next round. So in steady state a round
// carries about N holds and N finishes, and N carts complete per round
// trip. Each cart makes exactly the calls of the closed loop (checkout in
// run.go), one per round, each only after the reply it depends on: the
// check is the same.

// step is what a cart under way sends next.
type step uint8

const (
	stepHold step = iota
	stepResendHold
	stepFinish
	stepResendFinish
)

// underWay is a cart in the pipelined loop.
type underWay struct {
	i    int
	id   string // r.ID(i), made once
	step step
	// tries is how often the current step's call failed (outcome unknown).
	tries int
	start time.Time
}

// pipeStats are a worker's round counts.
type pipeStats struct {
	rounds, calls int64
}

// workPipelined runs worker k's carts in rounds (see above).
func (r *run) workPipelined(ctx context.Context, k int) {
	pp := r.sessions[k].(store.CheckoutPipeliner)
	depth := r.cfg.Pipeline
	var active, next []underWay
	var calls []store.CheckoutCall
	exhausted := false
	for ctx.Err() == nil {
		for n := 0; !exhausted && n < depth; n++ {
			i := r.take()
			if i < 0 {
				exhausted = true
				break
			}
			active = append(active, underWay{i: i, id: r.ID(i), step: stepHold, start: time.Now()})
		}
		if len(active) == 0 {
			return
		}
		for len(calls) < len(active) {
			calls = append(calls, store.CheckoutCall{})
		}
		batch := calls[:len(active)]
		for j := range active {
			r.fillCall(&batch[j], &active[j])
		}
		err := pp.CheckoutPipeline(ctx, batch)
		r.pipe[k].rounds++
		r.pipe[k].calls += int64(len(batch))
		next = next[:0]
		for j := range active {
			a, c := &active[j], &batch[j]
			if err != nil {
				c.Err = err
			}
			if r.advance(ctx, a, c) {
				next = append(next, *a)
				continue
			}
			d := int64(time.Since(a.start))
			r.latMax[k] = max(r.latMax[k], d)
			r.latency[k].RecordValue(min(max(d, 1), int64(time.Hour)))
			r.outs[a.i].done = true
			r.doneN.Add(1)
		}
		active, next = next, active
	}
}

// fillCall makes a's next call.
func (r *run) fillCall(c *store.CheckoutCall, a *underWay) {
	cart := &r.w.Carts[a.i]
	c.Hold, c.TTL, c.Lines = a.id, 0, nil
	switch a.step {
	case stepHold, stepResendHold:
		c.Kind, c.TTL, c.Lines = store.CallHold, r.opt.TTL, cart.Lines
	default:
		c.Kind = store.CallConfirm
		if cart.Fate == FateCancel {
			c.Kind = store.CallCancel
		}
	}
}

// advance records c, the reply to a's call, as checkout in run.go records
// the same call's, and moves a on; it returns false when the cart is done.
func (r *run) advance(ctx context.Context, a *underWay, c *store.CheckoutCall) bool {
	cart, out := &r.w.Carts[a.i], &r.outs[a.i]
	if c.Err != nil {
		what := "hold"
		if a.step >= stepFinish {
			what = cart.Fate.String()
		}
		r.failf("%s %s: %v", what, c.Hold, c.Err)
		a.tries++
		if a.tries <= r.opt.CallRetries && ctx.Err() == nil {
			return true
		}
		a.tries = 0
		switch a.step {
		case stepHold:
			// It may exist: it must then expire. The checker looks.
			out.unknown = true
			return false
		case stepResendHold:
			out.resendDiff = "the repeat's outcome is unknown"
			return r.afterHold(a)
		case stepFinish:
			out.finishUnknown = true
			return false
		default:
			out.resend = true
			out.resendDiff = "the repeated " + cart.Fate.String() + "'s outcome is unknown"
			return false
		}
	}
	a.tries = 0
	switch a.step {
	case stepHold:
		r.record(out, &c.Res)
		if c.Res.Code != store.CheckoutOK {
			return false
		}
		if cart.ResendHold {
			out.resend = true
			a.step = stepResendHold
			return true
		}
		return r.afterHold(a)
	case stepResendHold:
		first := store.HoldResult{Code: out.code, ExpiresAtMS: out.expiresAt, Lines: out.lines}
		out.resendDiff = diff(&first, &c.Res, true)
		return r.afterHold(a)
	case stepFinish:
		out.finish = c.Code
		if cart.ResendFinish {
			a.step = stepResendFinish
			return true
		}
		return false
	default:
		out.resend = true
		if c.Code != out.finish {
			out.resendDiff = fmt.Sprintf("%s answered %s, its repeat %s", cart.Fate, out.finish, c.Code)
		}
		return false
	}
}

// afterHold moves a held cart on to its fate.
func (r *run) afterHold(a *underWay) bool {
	if r.w.Carts[a.i].Fate == FateAbandon {
		r.lag.add(a.id, r.outs[a.i].expiresAt)
		return false
	}
	a.step = stepFinish
	return true
}
