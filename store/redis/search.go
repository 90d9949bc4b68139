package redis

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// The catalog lives under its own prefix, apart from the stock keys that
// Load clears: a sorted set on the folded title (search.lua says why) and
// one hash per record. Titles are folded by Go (catalog.Fold), not by the
// script: Lua's string.lower knows ASCII alone, and the contract's folding
// is Unicode simple case folding.
const (
	catalogPrefix      = "allot-cat:"
	catalogIndexKey    = catalogPrefix + "idx"
	catalogRecordsKeys = catalogPrefix + "r:"
	// loadChunkRecords is how many records one pipelined round trip of
	// LoadCatalog sends.
	loadChunkRecords = 1000
)

//go:embed search.lua
var searchSource string

var searchScript = goredis.NewScript(searchSource)

var (
	_ store.Searcher      = (*Store)(nil)
	_ store.SearchSession = (*session)(nil)
)

// LoadCatalog replaces the catalog: every record a hash (title, brand,
// the SKU's units from rows) and a member of the index.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	units := store.SKUUnits(rows)
	var cursor uint64
	for {
		keys, next, err := s.client.Scan(ctx, cursor, catalogPrefix+"*", scanCount).Result()
		if err != nil {
			return fmt.Errorf("redis: clearing the catalog: %w", err)
		}
		if len(keys) > 0 {
			if err := s.client.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("redis: clearing the catalog: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	for start := 0; start < len(recs); start += loadChunkRecords {
		chunk := recs[start:min(start+loadChunkRecords, len(recs))]
		pipe := s.client.Pipeline()
		for i := range chunk {
			r := &chunk[i]
			pipe.HSet(ctx, catalogRecordsKeys+r.SKU, "t", r.Title, "b", r.Brand, "a", units[r.SKU])
			pipe.ZAdd(ctx, catalogIndexKey, goredis.Z{Member: catalog.Fold(r.Title) + "\x00" + r.SKU + "\x00" + catalog.Fold(r.Brand)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("redis: load catalog: records %d..%d: %w", start, start+len(chunk)-1, err)
		}
	}
	if err := searchScript.Load(ctx, s.client).Err(); err != nil {
		return fmt.Errorf("redis: loading the search script: %w", err)
	}
	return nil
}

// Search runs search.lua.
func (s *session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	brand := ""
	if q.Brand != "" {
		brand = catalog.Fold(q.Brand)
	}
	reply, err := searchScript.Run(ctx, s.client, []string{catalogIndexKey},
		catalog.Fold(q.Prefix), brand, q.Offset, q.Limit, catalogRecordsKeys).Slice()
	if err != nil {
		return out, fmt.Errorf("redis: search %q: %w", q.Prefix, err)
	}
	for _, item := range reply {
		f, ok := item.([]any)
		if !ok || len(f) != 4 {
			return out, fmt.Errorf("redis: search %q: a result that is not 4 fields: %v", q.Prefix, item)
		}
		var r catalog.Result
		var okSKU, okTitle, okBrand, okAvail bool
		r.SKU, okSKU = f[0].(string)
		r.Title, okTitle = f[1].(string)
		r.Brand, okBrand = f[2].(string)
		a, okAvail := f[3].(string)
		if !okSKU || !okTitle || !okBrand || !okAvail {
			return out, fmt.Errorf("redis: search %q: a result with a missing field: %v", q.Prefix, f)
		}
		if r.Available, err = strconv.ParseInt(a, 10, 64); err != nil {
			return out, fmt.Errorf("redis: search %q: available %q: %w", q.Prefix, a, err)
		}
		out = append(out, r)
	}
	return out, nil
}
