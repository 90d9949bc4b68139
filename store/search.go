package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"allot/catalog"
	"allot/inventory"
)

// Searcher is an optional Store capability: a product catalog with
// case-insensitive prefix search (DESIGN.md, "Catalog and search"). The
// bench's "search" workload finds it by type assertion; a store without it
// cannot run that workload.
//
// Concurrency: LoadCatalog is called by one goroutine, never at the same
// time as a session's searches. Search is called on a Session that also
// implements SearchSession, one goroutine per session.
type Searcher interface {
	// LoadCatalog replaces the store's catalog with recs and its stock
	// with rows (the SKUs' units, which every search result carries as
	// "available": a SKU's units over all its rows). recs are checked
	// (catalog.Record.Check) and normalized; no SKU repeats. A store may
	// keep each SKU's units in a column beside its record instead of
	// joining stock rows at query time: the workload does not change
	// stock while it searches.
	LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error
}

// SearchSession is the session side of Searcher.
type SearchSession interface {
	// Search runs q (already checked: q.Check() == "") and appends its
	// results to out in the contract's order: folded title bytes, then
	// SKU. Matching is Unicode simple case folding as catalog.Fold
	// defines it, whatever the datastore's own collation does. An error
	// means the search failed (a lost connection); an empty result is not
	// an error.
	Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error)
}

// SearchPipeliner is an optional SearchSession capability: several
// queries in flight on one session (the bench's --pipeline for the search
// workload). SearchPipeline runs qs in order and puts qs[i]'s results into
// outs[i] (appended to outs[i][:0]); len(outs) >= len(qs). An error means
// some queries failed; outs is then not meaningful.
type SearchPipeliner interface {
	SearchPipeline(ctx context.Context, qs []catalog.Query, outs [][]catalog.Result) error
}

// SKUUnits sums rows' counts per SKU, saturated at math.MaxInt64 as the
// engine does: what a search result's "available" is.
func SKUUnits(rows []inventory.Row) map[string]int64 {
	out := make(map[string]int64)
	for _, r := range rows {
		v := out[r.Key.SKU]
		if v > 1<<63-1-r.Count {
			out[r.Key.SKU] = 1<<63 - 1
			continue
		}
		out[r.Key.SKU] = v + r.Count
	}
	return out
}

// CatalogID returns a random id (16 hex digits) for the names of one
// catalog load's table, space or keys: every load makes its own, so two
// runs loading a catalog on one server at once never touch each other's.
// Random rather than RWSpaceID's process id: processes in two PID
// namespaces may share a server and a pid.
func CatalogID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: a catalog id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
