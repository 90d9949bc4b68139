package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// Each LoadCatalog writes a catalog space of its own: two keys,
// "allot-cat:{<random id>}:idx", a sorted set on the folded title
// (search.lua says why), and "allot-cat:{<id>}:rec", one hash of every
// record. Titles are folded by Go (catalog.Fold), not by the script:
// Lua's string.lower knows ASCII alone, and the contract's folding is
// Unicode simple case folding.
//
// A space of its own, not fixed keys: the project's Redis is shared, and
// a second catalog loaded under the same keys (another bench, a test)
// cleared and refilled them in the middle of a 1M-record run, whose check
// then failed with records missing (TestCatalogsLoadedAtOnce). The two
// keys carry a lease (catalogLease) that the loading Store renews while
// its client is open, and Close deletes them: a bench killed mid-run
// leaves nothing behind for longer than the lease. The alternative, a
// hash per record under a per-run prefix, was rejected: a million keys
// can neither carry a renewed lease nor be deleted in one step.
const (
	catalogPrefix = "allot-cat:"
	// loadChunkRecords is how many records one pipelined round trip of
	// LoadCatalog sends.
	loadChunkRecords = 1000
	// catalogLease is how long a space outlives the last renewal;
	// catalogRenewEvery is how often its Store renews it.
	catalogLease      = 2 * time.Minute
	catalogRenewEvery = 20 * time.Second
	// catalogDropTimeout bounds the deletion of a catalog on Close.
	catalogDropTimeout = 10 * time.Second
)

//go:embed search.lua
var searchSource string

var searchScript = goredis.NewScript(searchSource)

var (
	_ store.Searcher        = (*Store)(nil)
	_ store.SearchSession   = (*session)(nil)
	_ store.SearchPipeliner = (*session)(nil)
)

// catalogSpace is one loaded catalog's keys and the goroutine renewing
// their lease.
type catalogSpace struct {
	index, records string
	stop           chan struct{}
	done           chan struct{}
}

// catalogState is a Store's catalog: the space loaded last, and where a
// new space's id comes from.
type catalogState struct {
	space atomic.Pointer[catalogSpace]
	// newID is nil outside tests: a random id. A test gives two stores
	// one id to show what shared keys break.
	newID func() string
}

func (cs *catalogState) newSpace() (*catalogSpace, error) {
	var id string
	if cs.newID != nil {
		id = cs.newID()
	} else {
		var err error
		if id, err = store.CatalogID(); err != nil {
			return nil, err
		}
	}
	base := catalogPrefix + "{" + id + "}:"
	return &catalogSpace{index: base + "idx", records: base + "rec", stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// renew extends the lease every catalogRenewEvery until stop is closed or
// the client is.
func (sp *catalogSpace) renew(c *goredis.Client) {
	defer close(sp.done)
	t := time.NewTicker(catalogRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-sp.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), catalogRenewEvery)
		_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
			p.PExpire(ctx, sp.index, catalogLease)
			p.PExpire(ctx, sp.records, catalogLease)
			return nil
		})
		cancel()
		if errors.Is(err, goredis.ErrClosed) {
			return
		}
	}
}

// drop stops the renewal and deletes the keys.
func (sp *catalogSpace) drop(ctx context.Context, c *goredis.Client) error {
	close(sp.stop)
	<-sp.done
	if err := c.Unlink(ctx, sp.index, sp.records).Err(); err != nil && !errors.Is(err, goredis.ErrClosed) {
		return fmt.Errorf("redis: deleting the catalog %s: %w", sp.index, err)
	}
	return nil
}

// dropCatalog deletes the loaded catalog, if any (Close).
func (s *Store) dropCatalog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, catalogDropTimeout)
	defer cancel()
	if sp := s.catalog.space.Swap(nil); sp != nil {
		return sp.drop(ctx, s.client)
	}
	return nil
}

// LoadCatalog replaces the catalog: a new space holding every record
// (title, brand, the SKU's units from rows) and its index entry. The
// previous space is deleted once the new one is complete; on an error the
// new one is deleted and the previous one stays.
func (s *Store) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	units := store.SKUUnits(rows)
	sp, err := s.catalog.newSpace()
	if err != nil {
		return err
	}
	go sp.renew(s.client)
	fail := func(err error) error {
		sp.drop(context.Background(), s.client)
		return err
	}
	for start := 0; start < len(recs); start += loadChunkRecords {
		chunk := recs[start:min(start+loadChunkRecords, len(recs))]
		pipe := s.client.Pipeline()
		for i := range chunk {
			r := &chunk[i]
			pipe.HSet(ctx, sp.records, r.SKU, r.Title+"\x00"+r.Brand+"\x00"+strconv.FormatInt(units[r.SKU], 10))
			pipe.ZAdd(ctx, sp.index, goredis.Z{Member: catalog.Fold(r.Title) + "\x00" + r.SKU + "\x00" + catalog.Fold(r.Brand)})
		}
		// Every chunk sets the lease, so that no key of the space is ever
		// without one, even before the first renewal.
		pipe.PExpire(ctx, sp.records, catalogLease)
		pipe.PExpire(ctx, sp.index, catalogLease)
		if _, err := pipe.Exec(ctx); err != nil {
			return fail(fmt.Errorf("redis: load catalog: records %d..%d: %w", start, start+len(chunk)-1, err))
		}
	}
	if err := searchScript.Load(ctx, s.client).Err(); err != nil {
		return fail(fmt.Errorf("redis: loading the search script: %w", err))
	}
	if old := s.catalog.space.Swap(sp); old != nil {
		if err := old.drop(ctx, s.client); err != nil {
			return err
		}
	}
	return nil
}

// Search runs search.lua.
func (s *session) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	sp := s.store.catalog.space.Load()
	if sp == nil {
		return out, errors.New("redis: search: no catalog loaded (LoadCatalog)")
	}
	reply, err := searchScript.Run(ctx, s.client, []string{sp.index, sp.records}, searchArgs(q)...).Slice()
	if err != nil {
		return out, fmt.Errorf("redis: search %q: %w", q.Prefix, err)
	}
	return appendSearchReply(out, q, reply)
}

// SearchPipeline sends every query as an EVALSHA of search.lua (loaded by
// LoadCatalog) in one pipeline: one round trip for all of them.
func (s *session) SearchPipeline(ctx context.Context, qs []catalog.Query, outs [][]catalog.Result) error {
	sp := s.store.catalog.space.Load()
	if sp == nil {
		return errors.New("redis: search: no catalog loaded (LoadCatalog)")
	}
	keys := []string{sp.index, sp.records}
	pipe := s.client.Pipeline()
	cmds := make([]*goredis.Cmd, len(qs))
	for i, q := range qs {
		cmds[i] = searchScript.EvalSha(ctx, pipe, keys, searchArgs(q)...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: pipelined search: %w", err)
	}
	for i, c := range cmds {
		reply, err := c.Slice()
		if err != nil {
			return fmt.Errorf("redis: search %q: %w", qs[i].Prefix, err)
		}
		if outs[i], err = appendSearchReply(outs[i][:0], qs[i], reply); err != nil {
			return err
		}
	}
	return nil
}

// searchArgs are search.lua's arguments for q: the folded prefix and
// brand prefix ("" for none), offset and limit.
func searchArgs(q catalog.Query) []any {
	brand := ""
	if q.Brand != "" {
		brand = catalog.Fold(q.Brand)
	}
	return []any{catalog.Fold(q.Prefix), brand, q.Offset, q.Limit}
}

// appendSearchReply appends search.lua's reply to out.
func appendSearchReply(out []catalog.Result, q catalog.Query, reply []any) ([]catalog.Result, error) {
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
		var err error
		if r.Available, err = strconv.ParseInt(a, 10, 64); err != nil {
			return out, fmt.Errorf("redis: search %q: available %q: %w", q.Prefix, a, err)
		}
		out = append(out, r)
	}
	return out, nil
}
