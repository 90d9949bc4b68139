package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// Each LoadCatalog makes a table of its own, allot_catalog_<random id>
// (in Options.Schema), fills it, and only then drops the table the store
// loaded before; Close drops the store's table. A fixed table,
// allot_catalog, was rejected: two runs loading a catalog on one server at
// once (two benches, a bench and a test) each truncated and refilled the
// other's, so a run's check failed, or passed on the other run's records
// (TestCatalogsLoadedAtOnce). The id is store.CatalogID's.
// A bench killed mid-run leaves its table behind, as it leaves its
// records table (rw_records_*): DROP TABLE allot_catalog_<id> removes it.
const catalogDropTimeout = 10 * time.Second

// catalogTable is one loaded catalog: its table and its queries.
type catalogTable struct {
	name string // unquoted, for DROP and messages
	// search and searchBrand are the queries' text on this table (pgx
	// prepares and caches each text per connection).
	search, searchBrand string
}

// catalogSQL returns the named sql/ template with the table (and its
// index) filled in, quoted.
func catalogSQL(name, table string) string {
	t := template.Must(template.New(name).Parse(SQL(name)))
	var b strings.Builder
	if err := t.Execute(&b, map[string]string{
		"Table": pgx.Identifier{table}.Sanitize(),
		"Index": pgx.Identifier{table + "_title"}.Sanitize(),
	}); err != nil {
		panic("postgres: template " + name + ": " + err.Error())
	}
	return b.String()
}

func newCatalogTable() (*catalogTable, error) {
	id, err := store.CatalogID()
	if err != nil {
		return nil, err
	}
	name := "allot_catalog_" + id
	return &catalogTable{
		name:        name,
		search:      catalogSQL("catalog_search", name),
		searchBrand: catalogSQL("catalog_search_brand", name),
	}, nil
}

func (ct *catalogTable) drop(ctx context.Context, c *pgxpool.Conn) error {
	if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{ct.name}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: dropping the catalog %s: %w", ct.name, err)
	}
	return nil
}

// LoadCatalog makes a new table holding recs (CREATE and COPY in one
// transaction, so a failed load leaves nothing), each with its SKU's units
// from rows, analyzes it, and then drops the table loaded before.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	units := store.SKUUnits(rows)
	ct, err := newCatalogTable()
	if err != nil {
		return err
	}
	c, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: load catalog: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, catalogSQL("catalog_schema", ct.name)); err != nil {
		return fmt.Errorf("postgres: catalog schema: %w", err)
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
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{ct.name},
		[]string{"sku", "title", "brand", "title_folded", "brand_folded", "available"}, src); err != nil {
		return fmt.Errorf("postgres: load catalog: %w", err)
	}
	if _, err := tx.Exec(ctx, "ANALYZE "+pgx.Identifier{ct.name}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: load catalog: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: load catalog: commit: %w", err)
	}
	if old := s.catalog.Swap(ct); old != nil {
		return old.drop(ctx, c)
	}
	return nil
}

// dropCatalog drops the store's catalog table, if it loaded one (Close).
func (s *Store) dropCatalog() error {
	ct := s.catalog.Swap(nil)
	if ct == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), catalogDropTimeout)
	defer cancel()
	c, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return ct.drop(ctx, c)
}

// Search runs one indexed range query (pgx prepares and caches it).
func (s *Session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	ct := s.store.catalog.Load()
	if ct == nil {
		return out, errors.New("postgres: search: no catalog loaded (LoadCatalog)")
	}
	lo, hi := prefixRange(catalog.Fold(q.Prefix))
	var rows pgx.Rows
	var err error
	if q.Brand == "" {
		rows, err = s.conn.Query(ctx, ct.search, lo, hi, q.Offset, q.Limit)
	} else {
		blo, bhi := prefixRange(catalog.Fold(q.Brand))
		rows, err = s.conn.Query(ctx, ct.searchBrand, lo, hi, blo, bhi, q.Offset, q.Limit)
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
