package embedded

import (
	"context"
	"fmt"

	"allot/catalog"
	"allot/engine"
	"allot/inventory"
	"allot/store"
)

var (
	_ store.Searcher      = (*Store)(nil)
	_ store.SearchSession = (*session)(nil)
)

// LoadCatalog loads rows (Load), deletes the records not in recs and sets
// every record of recs, with many requests in flight so that they share
// journal frames.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	if err := s.Load(ctx, rows); err != nil {
		return err
	}
	old, err := s.eng.CatalogRecords()
	if err != nil {
		return fmt.Errorf("embedded: load catalog: %w", err)
	}
	keep := make(map[string]bool, len(recs))
	for i := range recs {
		keep[recs[i].SKU] = true
	}
	ops := make([]inventory.Op, 0, len(recs))
	for i := range old {
		if !keep[old[i].SKU] {
			ops = append(ops, inventory.CatalogDel(old[i].SKU))
		}
	}
	for i := range recs {
		ops = append(ops, inventory.CatalogSet(recs[i]))
	}
	return submitWindowed(ctx, s.eng, ops)
}

// submitWindowed submits ops keeping up to 4096 in flight and fails on the
// first that is not applied.
func submitWindowed(ctx context.Context, eng *engine.Engine, ops []inventory.Op) error {
	const window = 4096
	reqs := make([]*engine.Request, 0, window)
	wait := func() error {
		for _, r := range reqs {
			if err := r.Wait(); err != nil {
				return fmt.Errorf("embedded: load catalog: %w", err)
			}
			if r.Result.Code != inventory.CodeOK {
				return fmt.Errorf("embedded: load catalog: %s %q: %s %s", r.Op.Kind, r.Op.Key.SKU, r.Result.Code, r.Result.Detail)
			}
		}
		reqs = reqs[:0]
		return nil
	}
	for i := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := engine.NewRequest()
		r.Op = ops[i]
		if err := eng.Submit(r); err != nil {
			return fmt.Errorf("embedded: load catalog: %w", err)
		}
		if reqs = append(reqs, r); len(reqs) == window {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}

// Search runs q on the engine.
func (s *session) Search(_ context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	s.req.Op = inventory.Search(q)
	if err := s.eng.Submit(s.req); err != nil {
		return out, err
	}
	if err := s.req.Wait(); err != nil {
		return out, err
	}
	res := s.req.Result
	s.req.Result = inventory.Result{}
	if res.Code != inventory.CodeOK {
		return out, fmt.Errorf("embedded: search %+v: %s %s", q, res.Code, res.Detail)
	}
	return append(out, res.Hits...), nil
}
