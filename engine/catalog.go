package engine

import (
	"allot/catalog"
	"allot/inventory"
)

// The catalog kept beside the stock rows (inventory/catalog_op.go): thin
// wrappers over Do, so that a Go program embedding the engine needs no op
// plumbing. key is an idempotency key ("" for none).

// CatalogSet adds or replaces a record (CodeOK, or CodeInvalid with the
// detail).
func (e *Engine) CatalogSet(r catalog.Record, key string) (inventory.Result, error) {
	op := inventory.CatalogSet(r)
	op.IdempotencyKey = key
	return e.do(op, nil)
}

// CatalogDel deletes the record of sku: Result.Count is 1 when there was
// one, else 0.
func (e *Engine) CatalogDel(sku, key string) (inventory.Result, error) {
	op := inventory.CatalogDel(sku)
	op.IdempotencyKey = key
	return e.do(op, nil)
}

// CatalogGet reads the record of sku into Result.Record, or CodeNotFound.
func (e *Engine) CatalogGet(sku string) (inventory.Result, error) {
	return e.do(inventory.CatalogGet(sku), nil)
}

// Search runs q: Result.Hits, in the contract's order, each with its SKU's
// available units over all its rows.
func (e *Engine) Search(q catalog.Query) (inventory.Result, error) {
	return e.do(inventory.Search(q), nil)
}

// CatalogRecords returns every record, ordered by folded title then SKU.
func (e *Engine) CatalogRecords() ([]catalog.Record, error) {
	var out []catalog.Record
	err := e.read(func(s *inventory.State) { out = s.CatalogRecords() })
	return out, err
}
