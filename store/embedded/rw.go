package embedded

import (
	"context"

	"allot/inventory"
	"allot/store"
	"allot/store/rowrecords"
)

var _ store.RWStore = (*Store)(nil)

// RWOpen keeps the records of workloads rw and kv as rows of this engine
// (package rowrecords says how each request maps onto its ops).
func (s *Store) RWOpen(_ context.Context, opts store.RWOptions) (store.RWSpace, error) {
	setting, err := rowrecords.Check(opts, store.Durability(s.cfg.Durability))
	if err != nil {
		return nil, err
	}
	open := func(context.Context) (rowrecords.Ops, error) { return &engineOps{s: s}, nil }
	return rowrecords.NewSpace(setting, &engineOps{s: s}, open), nil
}

// engineOps submits ops to the engine directly.
type engineOps struct {
	s  *Store
	se *session // its requests are reused by Pipeline
}

func (o *engineOps) Do(_ context.Context, op inventory.Op) (inventory.Result, error) {
	return o.s.eng.Do(op, nil)
}

func (o *engineOps) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	if o.se == nil {
		o.se = &session{eng: o.s.eng}
	}
	for i := range ops {
		results[i].Lines = nil
	}
	return o.se.Pipeline(ctx, ops, results)
}

func (o *engineOps) Close() error { return nil }
