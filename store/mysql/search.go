package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

var (
	_ store.Searcher      = (*Store)(nil)
	_ store.SearchSession = (*Session)(nil)
)

// likePrefix returns the LIKE pattern of the strings starting with p:
// '\', '%' and '_' in p escaped with '\' (LIKE's default escape), then '%'.
func likePrefix(p string) string {
	var b strings.Builder
	b.Grow(len(p) + 4)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\', '%', '_':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('%')
	return b.String()
}

// LoadCatalog replaces the catalog table with recs: DROP and CREATE, then
// multi-row INSERTs in one transaction, each record with its SKU's units
// from rows.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	units := store.SKUUnits(rows)
	table := "`" + s.opt.Table + "_catalog`"
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mysql: load catalog: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
		return fmt.Errorf("mysql: load catalog: %w", err)
	}
	if _, err := c.ExecContext(ctx, s.fill("catalog_schema")); err != nil {
		return fmt.Errorf("mysql: load catalog: creating table: %w", err)
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return fmt.Errorf("mysql: load catalog: %w", err)
	}
	args := make([]any, 0, 6*loadBatchRows)
	for start := 0; start < len(recs); start += loadBatchRows {
		batch := recs[start:min(start+loadBatchRows, len(recs))]
		var q strings.Builder
		q.WriteString("INSERT INTO " + table + " (sku, title, brand, title_folded, brand_folded, available) VALUES ")
		args = args[:0]
		for i := range batch {
			if i > 0 {
				q.WriteString(",")
			}
			q.WriteString("(?,?,?,?,?,?)")
			r := &batch[i]
			args = append(args, r.SKU, r.Title, r.Brand, catalog.Fold(r.Title), catalog.Fold(r.Brand), units[r.SKU])
		}
		if _, err := c.ExecContext(ctx, q.String(), args...); err != nil {
			c.ExecContext(context.Background(), "ROLLBACK")
			return fmt.Errorf("mysql: load catalog: insert: %w", err)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("mysql: load catalog: commit: %w", err)
	}
	if _, err := c.ExecContext(ctx, "ANALYZE TABLE "+table); err != nil {
		return fmt.Errorf("mysql: load catalog: %w", err)
	}
	return nil
}

// Search runs one LIKE 'prefix%' range query over the folded title.
func (s *Session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	if s.search == nil {
		if err := s.prepareSearch(ctx); err != nil {
			return out, err
		}
	}
	var rows *sql.Rows
	var err error
	if q.Brand == "" {
		rows, err = s.search.QueryContext(ctx, likePrefix(catalog.Fold(q.Prefix)), q.Offset, q.Limit)
	} else {
		rows, err = s.searchBrand.QueryContext(ctx, likePrefix(catalog.Fold(q.Prefix)), likePrefix(catalog.Fold(q.Brand)), q.Offset, q.Limit)
	}
	if err != nil {
		return out, fmt.Errorf("mysql: search %q: %w", q.Prefix, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r catalog.Result
		if err := rows.Scan(&r.SKU, &r.Title, &r.Brand, &r.Available); err != nil {
			return out, fmt.Errorf("mysql: search %q: %w", q.Prefix, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("mysql: search %q: %w", q.Prefix, err)
	}
	return out, nil
}

// prepareSearch prepares the two search statements on the session's
// connection.
func (s *Session) prepareSearch(ctx context.Context) error {
	st := &Store{opt: s.opt}
	var err error
	if s.search, err = s.conn.PrepareContext(ctx, st.fill("catalog_search")); err != nil {
		return fmt.Errorf("mysql: preparing catalog_search: %w", err)
	}
	if s.searchBrand, err = s.conn.PrepareContext(ctx, st.fill("catalog_search_brand")); err != nil {
		return fmt.Errorf("mysql: preparing catalog_search_brand: %w", err)
	}
	return nil
}
