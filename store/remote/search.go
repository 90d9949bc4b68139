package remote

import (
	"context"
	"errors"
	"fmt"

	"allot/catalog"
	"allot/client"
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
//
// On a cluster the records go where the sessions will search them: the
// primary Load found (a standby refuses every CATALOG.SET). A chunk a
// node refuses as "not primary" goes again to the primary named (a
// failover since Load): a set of a whole record, sent again, leaves it
// as recs has it.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	if err := s.Load(ctx, rows); err != nil {
		return err
	}
	c, err := client.New(s.oneConn(s.sessionAddr()))
	if err != nil {
		return fmt.Errorf("store/remote: load catalog: %w", err)
	}
	defer func() { c.Close() }()
	for start := 0; start < len(recs); start += catalogChunk {
		chunk := recs[start:min(start+catalogChunk, len(recs))]
		for hop := 0; ; hop++ {
			err := catalogSetOn(ctx, c, chunk)
			if err == nil {
				break
			}
			addr, ok := client.NextPrimary(ctx, catalogRefusal(err), hop, c.Addr())
			if !ok && (errors.Is(err, client.ErrConnect) || errors.Is(err, client.ErrClosed)) {
				return fmt.Errorf("%w: allot at %s: load catalog: %v", store.ErrServerDown, c.Addr(), err)
			}
			if !ok {
				return fmt.Errorf("store/remote: load catalog: %w", err)
			}
			next, nerr := client.New(s.oneConn(addr))
			if nerr != nil {
				return fmt.Errorf("store/remote: load catalog: the primary %s a node named: %w", addr, nerr)
			}
			c.Close()
			c = next
		}
	}
	return nil
}

// catalogSetOn sends recs in one pipeline on a connection of c.
func catalogSetOn(ctx context.Context, c *client.Client, recs []catalog.Record) error {
	cn, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	return cn.CatalogSetPipeline(ctx, recs)
}

// catalogRefusal is the "not primary" refusal among the replies of a
// failed CatalogSetPipeline (err itself when it is no *CatalogSetError,
// or names none).
func catalogRefusal(err error) error {
	var ce *client.CatalogSetError
	if !errors.As(err, &ce) {
		return err
	}
	for _, r := range ce.Replies {
		if _, ok := client.PrimaryOf(r.Err); ok {
			return r.Err
		}
	}
	return err
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
