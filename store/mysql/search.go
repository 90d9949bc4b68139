package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

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

// Each LoadCatalog makes a table of its own, <table>_catalog_<random id>
// (<table> is Options.Table: rows_catalog_<id> for InnoDB,
// rows_myisam_catalog_<id> for MyISAM), fills it, and only then drops the
// table the store loaded before; Close drops the store's table. A fixed
// table per flavour, <table>_catalog, was rejected: two runs loading a
// catalog on one server at once (two benches, a bench and a test) each
// dropped and recreated the other's, so a run's search failed on a missing
// table, or answered from the other run's records
// (TestCatalogsLoadedAtOnce). The id is store.CatalogID's.
// MariaDB's DDL is not transactional (CREATE TABLE commits), so a load
// that fails after its CREATE drops its table itself. A bench killed
// mid-run leaves its table behind, as it leaves its records table:
// DROP TABLE <table>_catalog_<id> removes it.
const catalogDropTimeout = 10 * time.Second

// catalogTable is one loaded catalog: its table and its queries.
type catalogTable struct {
	name string // unquoted, for DROP and messages
	// search and searchBrand are the queries' text on this table; each
	// session prepares them on its connection (Session.prepareSearch).
	search, searchBrand string
}

func (s *Store) newCatalogTable() (*catalogTable, error) {
	id, err := store.CatalogID()
	if err != nil {
		return nil, err
	}
	name := s.opt.Table + "_catalog_" + id
	return &catalogTable{
		name:        name,
		search:      s.fillCatalog("catalog_search", name),
		searchBrand: s.fillCatalog("catalog_search_brand", name),
	}, nil
}

// execer is a *sql.DB or a *sql.Conn.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (ct *catalogTable) drop(ctx context.Context, ex execer) error {
	if _, err := ex.ExecContext(ctx, "DROP TABLE IF EXISTS `"+ct.name+"`"); err != nil {
		return fmt.Errorf("mysql: dropping the catalog %s: %w", ct.name, err)
	}
	return nil
}

// dropPooled drops ct's table on a connection of the pool, with a context
// of its own: a failed load's context may be done (a cancelled load) and
// its connection broken; Close has no context.
func (s *Store) dropPooled(ct *catalogTable) error {
	ctx, cancel := context.WithTimeout(context.Background(), catalogDropTimeout)
	defer cancel()
	return ct.drop(ctx, s.db)
}

// dropCatalog drops the store's catalog table, if it loaded one (Close).
func (s *Store) dropCatalog() error {
	ct := s.catalog.Swap(nil)
	if ct == nil {
		return nil
	}
	return s.dropPooled(ct)
}

// LoadCatalog makes a new table holding recs (CREATE, then multi-row
// INSERTs in one transaction, each record with its SKU's units from rows),
// analyzes it, makes it the store's catalog and then drops the table
// loaded before. A load that fails drops its new table and leaves the
// store's catalog as it was.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) (err error) {
	units := store.SKUUnits(rows)
	ct, err := s.newCatalogTable()
	if err != nil {
		return err
	}
	table := "`" + ct.name + "`"
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mysql: load catalog: %w", err)
	}
	created := false
	defer func() {
		if err == nil {
			c.Close()
			return
		}
		// Undo any transaction still open (harmless outside one), and
		// give the connection back before the DROP, which waits for the
		// locks a transaction on the table holds.
		c.ExecContext(context.Background(), "ROLLBACK")
		c.Close()
		if created {
			err = errors.Join(err, s.dropPooled(ct))
		}
	}()
	// A CREATE that failed may still have made the table (its context
	// cancelled while the server ran it), unless the table already
	// existed: then it is not this load's to drop.
	created = true
	if _, err := c.ExecContext(ctx, s.fillCatalog("catalog_schema", ct.name)); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == erTableExists {
			created = false
		}
		return fmt.Errorf("mysql: load catalog: creating table %s: %w", ct.name, err)
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
			return fmt.Errorf("mysql: load catalog: insert: %w", err)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("mysql: load catalog: commit: %w", err)
	}
	if _, err := c.ExecContext(ctx, "ANALYZE TABLE "+table); err != nil {
		return fmt.Errorf("mysql: load catalog: %w", err)
	}
	// The new table is the store's catalog now: a failure to drop the old
	// one must not drop it.
	created = false
	if old := s.catalog.Swap(ct); old != nil {
		return old.drop(ctx, c)
	}
	return nil
}

// erTableExists is MariaDB's ER_TABLE_EXISTS_ERROR.
const erTableExists = 1050

// Search runs one LIKE 'prefix%' range query over the folded title.
func (s *Session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	ct := s.store.catalog.Load()
	if ct == nil {
		return out, errors.New("mysql: search: no catalog loaded (LoadCatalog)")
	}
	if s.prepared != ct {
		if err := s.prepareSearch(ctx, ct); err != nil {
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

// prepareSearch prepares the two search statements on ct's table on the
// session's connection, closing those prepared on a table loaded before.
func (s *Session) prepareSearch(ctx context.Context, ct *catalogTable) error {
	s.closeSearch()
	var err error
	if s.search, err = s.conn.PrepareContext(ctx, ct.search); err != nil {
		s.search = nil
		return fmt.Errorf("mysql: preparing catalog_search on %s: %w", ct.name, err)
	}
	if s.searchBrand, err = s.conn.PrepareContext(ctx, ct.searchBrand); err != nil {
		s.searchBrand = nil
		s.closeSearch()
		return fmt.Errorf("mysql: preparing catalog_search_brand on %s: %w", ct.name, err)
	}
	s.prepared = ct
	return nil
}

// closeSearch closes the session's search statements, if prepared.
func (s *Session) closeSearch() {
	for _, st := range []*sql.Stmt{s.search, s.searchBrand} {
		if st != nil {
			st.Close()
		}
	}
	s.search, s.searchBrand, s.prepared = nil, nil, nil
}
