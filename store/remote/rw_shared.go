package remote

import (
	"context"
	"fmt"
	"sync"

	"allot/client"
	"allot/inventory"
	"allot/store/rowrecords"
)

var _ rowrecords.Ops = (*sharedOps)(nil)

// sharedOps is a record session of allot-mux: its calls go through the
// store's shared connection (client.Batcher), with the other sessions'
// calls, as the tarantool stores' record sessions share their connection.
// It holds no connection of its own: Close closes nothing.
type sharedOps struct {
	s *Store
	// rows is Pipeline's set of the rows a call names, kept between calls.
	rows map[inventory.RowKey]struct{}
}

func (o *sharedOps) Do(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	r, err := o.s.sh.do(ctx, op, nil)
	if err != nil {
		return r, o.s.wrap(err)
	}
	return r, nil
}

// Pipeline queues every op on the shared connection at once, so that
// they are in flight together (in the Batcher's next pipelines, beside
// the other sessions' calls), and waits for every reply. The Batcher
// takes them in the order they reach its queue, which is not ops' order:
// a call naming a row twice with a mutation among them (whose order
// decides the outcome) sends its ops one after another instead. An error
// of any op is the call's (the first, in ops' order); its class is the
// whole call's: an unknown outcome (client.ErrOutcomeUnknown) once any op
// of it may have been applied, however that op's own error reads, so a
// caller never resends a pipeline that applied some of its ops.
func (o *sharedOps) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	if len(results) < len(ops) {
		return fmt.Errorf("store/remote: %d results for %d ops", len(results), len(ops))
	}
	if len(ops) == 1 || o.namesAMutatedRowTwice(ops) {
		for i := range ops {
			r, err := o.s.sh.do(ctx, ops[i], results[i].Lines[:0])
			if err != nil {
				// Ops before i were applied.
				return o.s.wrap(pipelineError(i, len(ops), err, i > 0))
			}
			results[i] = r
		}
		return nil
	}
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i := range ops {
		wg.Go(func() {
			results[i], errs[i] = o.s.sh.do(ctx, ops[i], results[i].Lines[:0])
		})
	}
	wg.Wait()
	first, applied := -1, false
	for i, err := range errs {
		if err != nil && first < 0 {
			first = i
		}
		applied = applied || err == nil || client.MaybeApplied(err)
	}
	if first < 0 {
		return nil
	}
	return o.s.wrap(pipelineError(first, len(ops), errs[first], applied))
}

// pipelineError is the error of a pipeline of n ops whose op i failed with
// err: of unknown outcome when some op of it may have been applied
// (applied), whatever err's own class (a refusal of op i, a context that
// ended before op i was sent).
func pipelineError(i, n int, err error, applied bool) error {
	if applied && !client.MaybeApplied(err) {
		return fmt.Errorf("op %d of %d: %v (other ops of the pipeline may have been applied): %w", i+1, n, err, client.ErrOutcomeUnknown)
	}
	return fmt.Errorf("op %d of %d: %w", i+1, n, err)
}

// namesAMutatedRowTwice reports whether two of ops name one row and one
// of them changes it.
func (o *sharedOps) namesAMutatedRowTwice(ops []inventory.Op) bool {
	mutates := false
	for i := range ops {
		if ops[i].Kind != inventory.KindGet {
			mutates = true
			break
		}
	}
	if !mutates {
		return false
	}
	if o.rows == nil {
		o.rows = make(map[inventory.RowKey]struct{}, len(ops))
	}
	defer clear(o.rows)
	for i := range ops {
		if _, seen := o.rows[ops[i].Key]; seen {
			return true
		}
		o.rows[ops[i].Key] = struct{}{}
	}
	return false
}

// Close closes nothing: the shared connection is the store's.
func (o *sharedOps) Close() error { return nil }
