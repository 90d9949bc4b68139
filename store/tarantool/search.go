package tarantool

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	gotarantool "github.com/tarantool/go-tarantool/v2"
	"github.com/vmihailenco/msgpack/v5"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

//go:embed search.lua
var searchLuaSource string

// loadChunkRecords is how many records one load call inserts in one
// transaction.
const loadChunkRecords = 2000

// The store "naive-tarantool-search" is the tarantool store whose searches
// run the published procedure as written (search.lua,
// search_published): the scan that fell to ~2.5 requests/s. Its name
// starts with "naive", as the project's other deliberately wrong control
// does, so `--stores all` leaves it out; name it to measure it.
func init() {
	store.Register(store.Registration{
		Name:  "naive-tarantool-search",
		About: "Tarantool memtx with the published search procedure as written (GE iterator, no stop past the prefix); otherwise the tarantool store",
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			s, err := open(ctx, cfg, engine{name: "memtx", space: "allot_rows"})
			if err != nil {
				return nil, err
			}
			return &publishedStore{s}, nil
		},
		Server: store.ServerTarantool,
		// Its sessions embed the tarantool store's.
		Pipelines: []string{"checkout"},
		Refuses:   rwRefusal,
	})
}

var (
	_ store.Searcher      = (*Store)(nil)
	_ store.SearchSession = (*session)(nil)
	_ store.Searcher      = (*publishedStore)(nil)
)

// Each LoadCatalog makes a space of its own, allot_catalog_<random id>,
// fills it, and only then drops the space the store loaded before; Close
// drops the store's space, and so does the server when the store's
// connection ends without Close (a bench killed mid-run: search.lua's
// disconnect trigger, and the next load's sweep of spaces whose session
// is gone). A fixed space, allot_catalog, was rejected: two runs loading
// a catalog on one server at once (two benches, a bench and a test) each
// truncated and refilled the other's, so a run's check failed, or passed
// on the other run's records (TestCatalogsLoadedAtOnce).
const catalogDropTimeout = 10 * time.Second

func newCatalogName() (string, error) {
	id, err := store.CatalogID()
	return "allot_catalog_" + id, err
}

func (s *Store) dropCatalogSpace(ctx context.Context, name string) error {
	if _, err := s.conn.Do(gotarantool.NewCallRequest("allot_search.drop").Args([]any{name}).Context(ctx)).Get(); err != nil {
		return fmt.Errorf("tarantool: dropping the catalog %s: %w", name, err)
	}
	return nil
}

// dropCatalog drops the store's catalog space, if it loaded one (Close).
func (s *Store) dropCatalog() error {
	name := s.catalog.Swap(nil)
	if name == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), catalogDropTimeout)
	defer cancel()
	return s.dropCatalogSpace(ctx, *name)
}

// LoadCatalog defines search.lua's functions, creates a new catalog space
// and inserts recs (folded by Go) into it, a transaction per chunk, then
// drops the space loaded before. A failed load drops its new space.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	units := store.SKUUnits(rows)
	if _, err := s.conn.Do(gotarantool.NewEvalRequest(searchLuaSource).Context(ctx)).Get(); err != nil {
		return fmt.Errorf("tarantool: defining the search functions: %w", err)
	}
	name, err := newCatalogName()
	if err != nil {
		return err
	}
	if _, err := s.conn.Do(gotarantool.NewCallRequest("allot_search.setup").Args([]any{name}).Context(ctx)).Get(); err != nil {
		return fmt.Errorf("tarantool: creating the catalog space %s: %w", name, err)
	}
	tuples := make([][]any, 0, loadChunkRecords)
	for start := 0; start < len(recs); start += loadChunkRecords {
		tuples = tuples[:0]
		for i := start; i < min(start+loadChunkRecords, len(recs)); i++ {
			r := &recs[i]
			tuples = append(tuples, []any{r.SKU, r.Title, r.Brand, catalog.Fold(r.Title), catalog.Fold(r.Brand), uint64(units[r.SKU])})
		}
		call := gotarantool.NewCallRequest("allot_search.load").Args([]any{name, tuples}).Context(ctx)
		if _, err := s.conn.Do(call).Get(); err != nil {
			dctx, cancel := context.WithTimeout(context.Background(), catalogDropTimeout)
			s.dropCatalogSpace(dctx, name)
			cancel()
			return fmt.Errorf("tarantool: load catalog: records %d..%d: %w", start, start+len(tuples)-1, err)
		}
	}
	if old := s.catalog.Swap(&name); old != nil {
		return s.dropCatalogSpace(ctx, *old)
	}
	return nil
}

// Search calls the corrected procedure.
func (s *session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	return s.search(ctx, "allot_search.search", q, out)
}

func (s *session) search(ctx context.Context, function string, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	if err := ctx.Err(); err != nil {
		return out, err
	}
	name := s.store.catalog.Load()
	if name == nil {
		return out, errors.New("tarantool: search: no catalog loaded (LoadCatalog)")
	}
	brand := ""
	if q.Brand != "" {
		brand = catalog.Fold(q.Brand)
	}
	reply := searchReply{out: out}
	req := gotarantool.NewCallRequest(function).Args([]any{*name, catalog.Fold(q.Prefix), brand, q.Offset, q.Limit})
	if err := s.conn.Do(req).GetTyped(&reply); err != nil {
		return out, fmt.Errorf("tarantool: search %q: %w", q.Prefix, err)
	}
	return reply.out, nil
}

// publishedStore is the tarantool store whose sessions search with the
// published procedure.
type publishedStore struct{ *Store }

func (p *publishedStore) Session(ctx context.Context) (store.Session, error) {
	se, err := p.Store.Session(ctx)
	if err != nil {
		return nil, err
	}
	return &publishedSession{se.(*session)}, nil
}

// SearchProcedure names the procedure the store's sessions search with;
// the search workload puts it in the run's description, so that a report
// tells the two stores apart.
func (s *Store) SearchProcedure() string {
	return "the corrected procedure (allot_search.search): seek to the prefix, stop at the first key past it"
}

// SearchProcedure names the published procedure.
func (p *publishedStore) SearchProcedure() string {
	return "the published procedure as written (allot_search.search_published): a GE iterator that tests every later tuple, no stop past the prefix"
}

type publishedSession struct{ *session }

func (p *publishedSession) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	return p.search(ctx, "allot_search.search_published", q, out)
}

// searchReply decodes a search's one return value: an array of
// {sku, title, brand, available}.
type searchReply struct{ out []catalog.Result }

func (r *searchReply) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("reply has %d values, want 1", n)
	}
	if n, err = dec.DecodeArrayLen(); err != nil {
		return err
	}
	for range n {
		k, err := dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		if k != 4 {
			return fmt.Errorf("a result of %d fields, want 4", k)
		}
		var res catalog.Result
		if res.SKU, err = dec.DecodeString(); err != nil {
			return err
		}
		if res.Title, err = dec.DecodeString(); err != nil {
			return err
		}
		if res.Brand, err = dec.DecodeString(); err != nil {
			return err
		}
		if res.Available, err = dec.DecodeInt64(); err != nil {
			return err
		}
		r.out = append(r.out, res)
	}
	return nil
}
