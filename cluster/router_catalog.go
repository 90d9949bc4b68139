package cluster

import (
	"context"
	"fmt"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
)

// The catalog through a Router: CatalogSet, CatalogGet, CatalogDel and
// Search, with the single-node client's signatures and results
// (client.Client's), each sent to the primary of the catalog's shard
// (ShardMap.CatalogShard, the map's first) by the call path of a stock op
// of one shard (Router.call): a refusal (a failover, a standby that was
// primary) is retried for RetryFor on whichever node the lease names, an
// unknown outcome only when repeating the op cannot apply it twice (a
// read, or a write with an idempotency key: client.Retryable), and each
// error keeps its outcome class (client.ErrUnavailable,
// client.ErrOutcomeUnknown) and, for an error reply, its
// *client.ServerError. A client.Client's catalog methods make one attempt;
// these retry, as the Router's stock ops do.
//
// A search's available counts the SKU's units on the catalog's shard only:
// a SKU's groups are hashed over the shards, and no shard, nor the router,
// adds the others' units.
//
// Left out: Conn.CatalogSetPipeline and Conn.SearchPipeline are methods of
// one connection, which a Router does not lend (it offers no pipeline of
// stock ops either), and a pipeline of several catalog sets that a standby
// refused answers an unknown outcome (client.CatalogSetError: some records
// may have been applied), so the router could not follow a primary change
// for one. Batcher.Search batches over one client.Client; a program that
// batches searches can point a Batcher at the catalog shard's primary.

// CatalogSet sets record rec on the catalog's shard, with idempotency key
// key unless key is "" (client.Client.CatalogSet). A record outside the
// contract, or a key used with another record, is a *client.ServerError
// of no class: nothing was applied. Without a key, an attempt whose
// outcome is unknown is not repeated (client.ErrOutcomeUnknown).
func (r *Router) CatalogSet(ctx context.Context, rec catalog.Record, key string) error {
	op := inventory.CatalogSet(rec)
	op.IdempotencyKey = key
	_, err := r.call(ctx, r.m.CatalogShard(), op)
	return err
}

// CatalogDel deletes the record of sku on the catalog's shard and reports
// whether there was one, with idempotency key key unless key is ""
// (client.Client.CatalogDel).
func (r *Router) CatalogDel(ctx context.Context, sku, key string) (deleted bool, err error) {
	op := inventory.CatalogDel(sku)
	op.IdempotencyKey = key
	res, err := r.call(ctx, r.m.CatalogShard(), op)
	return err == nil && res.Count == 1, err
}

// CatalogGet reads the record of sku on the catalog's shard; found is
// false for an unknown SKU (client.Client.CatalogGet).
func (r *Router) CatalogGet(ctx context.Context, sku string) (rec catalog.Record, found bool, err error) {
	res, err := r.call(ctx, r.m.CatalogShard(), inventory.CatalogGet(sku))
	if err != nil || res.Code == inventory.CodeNotFound || res.Record == nil {
		return catalog.Record{}, false, err
	}
	return *res.Record, true, nil
}

// Search runs q on the catalog's shard and appends the results to out
// (client.Client.Search); a query outside the contract is a
// *client.ServerError of no class. Each result's Available counts the
// SKU's units on the catalog's shard only, not the SKU's units over the
// cluster (the groups of a SKU are spread over the shards).
func (r *Router) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	shard := r.m.CatalogShard()
	res, err := r.call(ctx, shard, inventory.Search(q))
	if err != nil {
		return out, err
	}
	if res.Code != inventory.CodeOK {
		// The -ERR a client.Client's Search returns as an error; the op
		// path (Router.Do, client.Client.Do) makes it a result.
		return out, fmt.Errorf("shard %s: %w", shard, &client.ServerError{Msg: "ERR " + res.Detail})
	}
	return append(out, res.Hits...), nil
}

// sendCatalog runs a catalog write or a catalog get on cn (send's part
// for the kinds client.Conn.Do does not encode), its reply as a Result:
// Count 1 for a deleted record, Record for one read, CodeNotFound for
// none.
func sendCatalog(ctx context.Context, cn *client.Conn, op *inventory.Op) (inventory.Result, error) {
	switch op.Kind {
	case inventory.KindCatalogSet:
		return inventory.Result{Code: inventory.CodeOK}, cn.CatalogSet(ctx, *op.Record, op.IdempotencyKey)
	case inventory.KindCatalogDel:
		deleted, err := cn.CatalogDel(ctx, op.Key.SKU, op.IdempotencyKey)
		res := inventory.Result{Code: inventory.CodeOK}
		if deleted {
			res.Count = 1
		}
		return res, err
	default: // inventory.KindCatalogGet
		rec, found, err := cn.CatalogGet(ctx, op.Key.SKU)
		if err != nil || !found {
			return inventory.Result{Code: inventory.CodeNotFound}, err
		}
		return inventory.Result{Code: inventory.CodeOK, Record: &rec}, nil
	}
}
