package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

var (
	_ store.Searcher      = (*Store)(nil)
	_ store.SearchSession = (*Session)(nil)
)

// prefixRange returns the range [lo, hi) of the strings starting with p.
// When p is all U+10FFFF (catalog.PrefixEnd finds no end), hi is p
// followed by more U+10FFFF than any folded title can hold (titles are at
// most 256 bytes, and folding at most doubles a rune's bytes).
func prefixRange(p string) (string, string) {
	end, ok := catalog.PrefixEnd(p)
	if !ok {
		end = p + strings.Repeat("\U0010FFFF", 2*catalog.TextBytesMax/4+1)
	}
	return p, end
}

var (
	searchSQL      = SQL("catalog_search")
	searchBrandSQL = SQL("catalog_search_brand")
)

// LoadCatalog replaces the table's contents with recs (COPY), each with its
// SKU's units from rows, then analyzes it.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	units := store.SKUUnits(rows)
	c, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if _, err := c.Exec(ctx, SQL("catalog_schema")); err != nil {
		return fmt.Errorf("postgres: catalog schema: %w", err)
	}
	if _, err := c.Exec(ctx, "TRUNCATE allot_catalog"); err != nil {
		return fmt.Errorf("postgres: load catalog: %w", err)
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(recs) {
			return nil, nil
		}
		r := &recs[i]
		i++
		return []any{r.SKU, r.Title, r.Brand, catalog.Fold(r.Title), catalog.Fold(r.Brand), units[r.SKU]}, nil
	})
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"allot_catalog"},
		[]string{"sku", "title", "brand", "title_folded", "brand_folded", "available"}, src); err != nil {
		return fmt.Errorf("postgres: load catalog: %w", err)
	}
	if _, err := c.Exec(ctx, "ANALYZE allot_catalog"); err != nil {
		return fmt.Errorf("postgres: load catalog: %w", err)
	}
	return nil
}

// Search runs one indexed range query (pgx prepares and caches it).
func (s *Session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	lo, hi := prefixRange(catalog.Fold(q.Prefix))
	var rows pgx.Rows
	var err error
	if q.Brand == "" {
		rows, err = s.conn.Query(ctx, searchSQL, lo, hi, q.Offset, q.Limit)
	} else {
		blo, bhi := prefixRange(catalog.Fold(q.Brand))
		rows, err = s.conn.Query(ctx, searchBrandSQL, lo, hi, blo, bhi, q.Offset, q.Limit)
	}
	if err != nil {
		return out, fmt.Errorf("postgres: search %q: %w", q.Prefix, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r catalog.Result
		if err := rows.Scan(&r.SKU, &r.Title, &r.Brand, &r.Available); err != nil {
			return out, fmt.Errorf("postgres: search %q: %w", q.Prefix, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("postgres: search %q: %w", q.Prefix, err)
	}
	return out, nil
}
