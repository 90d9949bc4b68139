package remote

import (
	"context"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
	"allot/store"
)

// Session is one worker's connection. After a failed call (the connection
// broke or the context ended) the next call takes a fresh connection, so
// that one lost reply does not fail the rest of the run.
type Session struct {
	store  *Store
	client *client.Client // PoolSize 1: this session's connection
	conn   *client.Conn
	depth  int
	// OpCheckout gives holds and orders, one command each (checkout.go).
	store.OpCheckout
}

var _ store.Pipeliner = (*Session)(nil)

func (se *Session) connection(ctx context.Context) (*client.Conn, error) {
	if se.conn != nil && se.conn.Err() == nil {
		return se.conn, nil
	}
	if se.conn != nil {
		se.conn.Close()
		se.conn = nil
	}
	cn, err := se.client.Conn(ctx)
	if err != nil {
		return nil, se.store.wrap(err)
	}
	se.conn = cn
	return cn, nil
}

// Capture takes n units of group g.
func (se *Session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	cn, err := se.connection(ctx)
	if err != nil {
		return inventory.Result{}, err
	}
	r, err := cn.Capture(ctx, g, n, lines)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}

// Release adds n units back to row k.
func (se *Session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	cn, err := se.connection(ctx)
	if err != nil {
		return inventory.Result{}, err
	}
	r, err := cn.Release(ctx, k, n)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}

// Pipeline runs ops in one round trip; see Pipeliner.
func (se *Session) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	cn, err := se.connection(ctx)
	if err != nil {
		return err
	}
	if err := cn.Pipeline(ctx, ops, results); err != nil {
		return se.store.wrap(err)
	}
	return nil
}

// PipelineDepth returns store.Config.Pipeline.
func (se *Session) PipelineDepth() int { return se.depth }

// Close closes the session's connection.
func (se *Session) Close() error {
	if se.conn != nil {
		se.conn.Close()
		se.conn = nil
	}
	return se.client.Close()
}

var _ store.SearchSession = (*sharedSession)(nil)

// sharedSession sends its ops through the store's Batcher.
type sharedSession struct {
	store *Store
	store.OpCheckout
}

func (se *sharedSession) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	r, err := se.store.batcher.Do(ctx, inventory.Capture(g, n), lines)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}

func (se *sharedSession) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	r, err := se.store.batcher.Do(ctx, inventory.Release(k, n), nil)
	if err != nil {
		return r, se.store.wrap(err)
	}
	return r, nil
}

// Search sends SEARCH through the store's Batcher.
func (se *sharedSession) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	out, err := se.store.batcher.Search(ctx, q, out)
	if err != nil {
		return out, se.store.wrap(err)
	}
	return out, nil
}

func (se *sharedSession) Close() error { return nil }
