package remote

import (
	"context"
	"fmt"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

var (
	_ store.Searcher        = (*Store)(nil)
	_ store.SearchSession   = (*Session)(nil)
	_ store.SearchPipeliner = (*Session)(nil)
)

// catalogChunk is how many CATALOG.SET one pipelined write of LoadCatalog
// carries.
const catalogChunk = 1000

// LoadCatalog loads rows (Load), then sets every record with pipelined
// CATALOG.SET. Records the server holds beyond recs stay (RESP has no
// command to list them): the bench starts its own server on a fresh data
// directory, where there are none.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	if err := s.Load(ctx, rows); err != nil {
		return err
	}
	cn, err := s.client.Conn(ctx)
	if err != nil {
		return s.wrap(err)
	}
	defer cn.Close()
	for start := 0; start < len(recs); start += catalogChunk {
		if err := cn.CatalogSetPipeline(ctx, recs[start:min(start+catalogChunk, len(recs))]); err != nil {
			return fmt.Errorf("store/remote: load catalog: %w", err)
		}
	}
	return nil
}

// Search sends SEARCH on the session's connection (a fresh one after a
// failed call, as for every other call of the session).
func (s *Session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	defer s.release()
	cn, err := s.connection(ctx)
	if err != nil {
		return out, err
	}
	out, err = cn.Search(ctx, q, out)
	if err != nil {
		return out, s.store.wrap(err)
	}
	return out, nil
}

// SearchPipeline sends every query of qs in one write on the session's
// connection and reads the replies in order.
func (s *Session) SearchPipeline(ctx context.Context, qs []catalog.Query, outs [][]catalog.Result) error {
	defer s.release()
	cn, err := s.connection(ctx)
	if err != nil {
		return err
	}
	if err := cn.SearchPipeline(ctx, qs, outs); err != nil {
		return s.store.wrap(err)
	}
	return nil
}
