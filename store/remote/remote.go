package remote

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"

	"allot/client"
	"allot/inventory"
	"allot/store"
	"allot/store/rowrecords"
)

func init() {
	store.Register(store.Registration{
		Name:  "allot",
		About: "allot serve over RESP with the Go client; starts its own server on a free port unless --addr is given",
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg, Options{})
		},
		Pipelines: pipelinedWorkloads,
		Refuses:   rowrecords.Refusal,
	})
	store.Register(store.Registration{
		Name:  "allot-mux",
		About: "as allot, but the sessions share one connection: ops that arrive together go as one pipeline (client.Batcher), as the tarantool store shares its connection",
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg, Options{Shared: true})
		},
		// Its sessions send one call at a time each; the Batcher
		// pipelines what the sessions send together.
		Refuses: rowrecords.Refusal,
	})
	store.Register(store.Registration{
		Name:         ClusterStore,
		About:        "allot serve --cluster, a shard replicated on NATS JetStream: --addr names a node of a running cluster (the Go client sends mutations on to the primary a standby names); with --kill the bench starts a private 3-node shard and --faults chooses what it kills",
		AddrRequired: true,
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			if cfg.Addr == "" {
				return nil, fmt.Errorf("%s: give --addr of a node of a running cluster (allot serve --cluster); the bench starts a cluster itself only for --kill", ClusterStore)
			}
			return Open(ctx, cfg, Options{})
		},
		Pipelines: pipelinedWorkloads,
		Refuses:   rowrecords.Refusal,
	})
}

// pipelinedWorkloads are the workloads whose sessions keep calls in
// flight, for the stores with a connection per session: every one with a
// pipelined form (Session is a store.Pipeliner, SearchPipeliner and
// CheckoutPipeliner; allot-mux's sharedSession is none of them).
var pipelinedWorkloads = []string{"ims", "search", "checkout"}

// ClusterStore is the name of the store of a replicated shard.
const ClusterStore = "allot-cluster"

// loadChunk is how many STOCK.SET (or STOCK.GET) one pipeline carries when
// loading (or reading back) rows.
const loadChunk = 1024

// Options are the settings of the remote store that store.Config does not
// carry.
type Options struct {
	// Binary is the allot executable run for a server this store starts.
	// Empty: $ALLOT_BIN, else the running executable when it is allot,
	// else allot on $PATH.
	Binary string
	// Password authenticates to a server given by Addr. Empty:
	// $ALLOT_REQUIREPASS.
	Password string
	// Shared makes every session send its ops through one connection, by
	// a client.Batcher, instead of a connection each.
	Shared bool
}

// Store drives an allot server over RESP.
type Store struct {
	cfg  store.Config
	addr string
	// client serves Load, Rows and Describe; each session has a client of
	// its own with one connection. One pool shared by the sessions, sized
	// to cfg.Workers, would make a caller that opens more sessions than it
	// announced wait for a connection that never frees.
	client    *client.Client
	clientCfg client.Config
	child     *Process // the server this store started, nil with an Addr
	sh        *shared  // Options.Shared: the sessions' one connection; nil without

	// keys are the rows of the last Load, in load order: what Rows reads
	// back, and what the next Load empties when it does not set them.
	keys []inventory.RowKey
	// loaded: a Load went through, so keys are what the server holds
	// (Rows refuses to read back without one: the server has no command
	// listing every row, and an empty answer would say every row is gone).
	loaded bool
	// primary is the node a standby named when the last Load went through
	// it ("" when the node at addr took the load): where sessions start,
	// and where Rows reads, instead of the standby.
	primary string
}

// Open connects to cfg.Addr, or starts an allot serve child process on a
// free loopback port with a temporary data directory (cfg.DataDir if set)
// in cfg.Durability, and connects to it.
func Open(ctx context.Context, cfg store.Config, o Options) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	s := &Store{cfg: cfg, addr: cfg.Addr}
	password := o.Password
	if cfg.Addr == "" {
		ch, err := StartProcess(ctx, o.Binary, cfg)
		if err != nil {
			return nil, err
		}
		s.child, s.addr, password = ch, ch.addr, ""
	} else if password == "" {
		password = os.Getenv("ALLOT_REQUIREPASS")
	}
	s.clientCfg = client.Config{Addr: s.addr, Password: password, PoolSize: 2}
	c, err := client.New(s.clientCfg)
	if err != nil {
		s.stopChild()
		return nil, fmt.Errorf("store/remote: %w", err)
	}
	s.client = c
	info, err := c.Hello(ctx)
	if err != nil {
		s.Close()
		var se *client.ServerError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("store/remote: allot at %s refused the connection: %w", s.addr, err)
		}
		return nil, fmt.Errorf("%w: allot at %s: %v", store.ErrServerDown, s.addr, err)
	}
	if info["server"] != "allot" {
		s.Close()
		return nil, fmt.Errorf("store/remote: %s is not an allot server (HELLO says server %q)", s.addr, info["server"])
	}
	if d := info["durability"]; d != string(cfg.Durability) {
		s.Close()
		return nil, fmt.Errorf("store/remote: allot at %s runs durability %s, the bench asked for %s: restart it with --durability %s, or run the bench with --durability %s",
			s.addr, d, cfg.Durability, cfg.Durability, d)
	}
	if o.Shared {
		// Made here, not by the first Session: sessions may be opened from
		// many goroutines at once, and each must find the same one. It
		// connects on first use, to the primary the last Load found.
		s.sh = &shared{cfg: s.clientCfg, start: s.addr, timeout: cfg.Timeout}
	}
	return s, nil
}

// Addr returns the server's RESP address.
func (s *Store) Addr() string { return s.addr }

var _ store.DataDirer = (*Store)(nil)

// DataDir returns the data directory of the server this store started
// (store.DataDirer): where the bench measures the fdatasync an fsync run
// is bound by, and whose file system it reports. Empty for a server given
// by Addr, whose directory the store cannot know.
func (s *Store) DataDir() string {
	if s.child == nil {
		return ""
	}
	return s.child.DataDir()
}

// Describe names the server, its version, durability and address, and how
// the sessions reach it (allot and allot-mux differ only there).
func (s *Store) Describe(ctx context.Context) (string, error) {
	info, err := s.client.Hello(ctx)
	if err != nil {
		return "", err
	}
	how := "at " + s.addr
	if s.child != nil {
		how = "started by the bench on " + s.addr
	}
	conns := "a connection per session"
	if s.sh != nil {
		conns = "sessions share one connection (client.Batcher)"
	}
	return fmt.Sprintf("allot serve %s, durability %s, over RESP, %s, %s", info["version"], info["durability"], conns, how), nil
}

// Load sets every row with pipelined STOCK.SET, and empties the rows of the
// previous Load that rows does not set. The wire contract has no delete
// and no listing, so rows a server held before this store's first Load (a
// server given by Addr, a data directory reused) stay; those in the groups
// of rows are emptied (emptyStale), so that no capture of the run can take
// their units. Rows of other groups stay as they were: the run touches
// none of them.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	if err := store.CheckRows(rows); err != nil {
		return fmt.Errorf("store/remote: load: %w", err)
	}
	keep := make(map[inventory.RowKey]struct{}, len(rows))
	ops := make([]inventory.Op, 0, len(rows)+len(s.keys))
	for _, r := range rows {
		keep[r.Key] = struct{}{}
		ops = append(ops, inventory.Stock(r.Key, r.Count, r.Price))
	}
	for _, k := range s.keys {
		if _, ok := keep[k]; !ok {
			ops = append(ops, inventory.Stock(k, 0, 0))
		}
	}
	// A standby of a cluster refuses the sets, naming the primary: the
	// load goes there (every op sets a row to a value: sending them again
	// is safe, whatever part the refusing node took).
	err := loadOn(ctx, s.client, ops, rows)
	primary := ""
	for hop := 0; hop < loadHopsMax; hop++ {
		addr, ok := client.PrimaryOf(err)
		if !ok {
			break
		}
		cfg := s.clientCfg
		cfg.Addr = addr
		pc, perr := client.New(cfg)
		if perr != nil {
			return fmt.Errorf("store/remote: load: the primary %s a standby named: %w", addr, perr)
		}
		err = loadOn(ctx, pc, ops, rows)
		pc.Close()
		primary = addr
	}
	if err != nil {
		return s.wrap(err)
	}
	// Sessions start at the primary the load found, rather than each
	// sending its first mutation to the standby to be told where it is.
	s.primary = primary
	if s.sh != nil {
		s.sh.startAt(s.sessionAddr())
	}
	s.keys = s.keys[:0]
	for _, r := range rows {
		s.keys = append(s.keys, r.Key)
	}
	s.loaded = true
	return nil
}

// loadHopsMax bounds how many "not primary" refusals a Load follows.
const loadHopsMax = 3

// loadOn sends a Load's sets (ops) to the server of c, then empties the
// rows of rows' groups that rows does not set.
func loadOn(ctx context.Context, c *client.Client, ops []inventory.Op, rows []inventory.Row) error {
	if err := pipelineAll(ctx, c, ops); err != nil {
		return err
	}
	return emptyStale(ctx, c, rows)
}

// drainCapturesMax bounds the captures that empty one group of rows a Load
// did not set (each takes up to inventory.QuantityMax units).
const drainCapturesMax = 64

// emptyStale makes every group of rows hold what rows put in it and no
// more. A group's total (AVAILABLE) above the sum of its loaded rows means
// the server has rows of that group that rows does not name, left by an
// earlier run: captures of this run would take their units, and the
// checker, which reads back only the loaded rows, would see stock vanish.
// Such a group is emptied with captures (the contract has no delete and no
// listing) and its loaded rows set again.
func emptyStale(ctx context.Context, c *client.Client, rows []inventory.Row) error {
	want := make(map[inventory.GroupKey]int64)
	var groups []inventory.GroupKey
	for _, r := range rows {
		g := r.Key.Group()
		total, seen := want[g]
		if !seen {
			groups = append(groups, g)
		}
		want[g] = min(total, math.MaxInt64-r.Count) + r.Count // saturated, as the server's total
	}
	cn, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	stale, err := staleGroups(ctx, cn, groups, want)
	if err != nil || len(stale) == 0 {
		return err
	}
	for _, g := range stale {
		for i := 0; ; i++ {
			r, err := cn.Available(ctx, g)
			if err != nil {
				return err
			}
			if r.Count == 0 {
				break
			}
			if i == drainCapturesMax {
				return fmt.Errorf("emptying group %v of an earlier run's rows: %d units left after %d captures", g, r.Count, i)
			}
			res, err := cn.Capture(ctx, g, min(r.Count, inventory.QuantityMax), nil)
			if err != nil {
				return err
			}
			if res.Code != inventory.CodeOK && res.Code != inventory.CodeInsufficient {
				return fmt.Errorf("emptying group %v of an earlier run's rows: %v %s", g, res.Code, res.Detail)
			}
		}
	}
	isStale := make(map[inventory.GroupKey]bool, len(stale))
	for _, g := range stale {
		isStale[g] = true
	}
	var again []inventory.Op
	for _, r := range rows {
		if isStale[r.Key.Group()] {
			again = append(again, inventory.Stock(r.Key, r.Count, r.Price))
		}
	}
	if err := pipelineOn(ctx, cn, again); err != nil {
		return err
	}
	if stale, err = staleGroups(ctx, cn, stale, want); err != nil {
		return err
	}
	if len(stale) > 0 {
		return fmt.Errorf("group %v holds other units than the Load set, after it was emptied and set again (does another client write to this server?)", stale[0])
	}
	return nil
}

// staleGroups returns the groups whose total on the server is not want's.
func staleGroups(ctx context.Context, cn *client.Conn, groups []inventory.GroupKey, want map[inventory.GroupKey]int64) ([]inventory.GroupKey, error) {
	var stale []inventory.GroupKey
	ops := make([]inventory.Op, 0, loadChunk)
	results := make([]inventory.Result, loadChunk)
	for i := 0; i < len(groups); i += loadChunk {
		ops = ops[:0]
		for _, g := range groups[i:min(i+loadChunk, len(groups))] {
			ops = append(ops, inventory.Available(g))
		}
		if err := cn.Pipeline(ctx, ops, results); err != nil {
			return nil, err
		}
		for j, r := range results[:len(ops)] {
			g := ops[j].Key.Group()
			if r.Code != inventory.CodeOK {
				return nil, fmt.Errorf("reading the total of group %v: %v %s", g, r.Code, r.Detail)
			}
			if r.Count != want[g] {
				stale = append(stale, g)
			}
		}
	}
	return stale, nil
}

// pipelineAll sends ops in pipelines of loadChunk on one connection of c;
// any op that does not come back OK stops it.
func pipelineAll(ctx context.Context, c *client.Client, ops []inventory.Op) error {
	cn, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	return pipelineOn(ctx, cn, ops)
}

// pipelineOn is pipelineAll on the connection cn. The first op goes alone:
// a standby refuses it naming the primary, and only the refusal of a call
// of one op keeps that class (client.PrimaryOf); in a longer pipeline the
// client reports it as an unknown outcome, which Load cannot follow.
func pipelineOn(ctx context.Context, cn *client.Conn, ops []inventory.Op) error {
	results := make([]inventory.Result, loadChunk)
	for first := true; len(ops) > 0; first = false {
		size := loadChunk
		if first {
			size = 1
		}
		chunk := ops[:min(size, len(ops))]
		ops = ops[len(chunk):]
		if err := cn.Pipeline(ctx, chunk, results); err != nil {
			return err
		}
		for i, r := range results[:len(chunk)] {
			if r.Code != inventory.CodeOK {
				return fmt.Errorf("loading row %v: %v %s", chunk[i].Key, r.Code, r.Detail)
			}
		}
	}
	return nil
}

// ErrNotLoaded is Rows's error on a store that loaded nothing: it reads
// back the keys it loaded, the server having no command that lists every
// row.
var ErrNotLoaded = errors.New("store/remote: no Load went through this store, and it reads back only the rows it loaded (the server lists no rows)")

// Rows reads back the rows of the last Load with pipelined STOCK.GET, from
// the primary the load found when it went through a standby: a standby
// applies the log a moment behind the primary, so what it reads right
// after the last acknowledgement may lack the last ops. If that primary
// cannot be reached (it died since), Rows reads at the node the store was
// opened at, which has applied the whole log once it serves as the new
// primary.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) {
	if s.primary != "" {
		rows, err := s.RowsAt(ctx, s.primary)
		if !errors.Is(err, store.ErrServerDown) {
			return rows, err
		}
	}
	return s.rowsVia(ctx, s.client)
}

// sessionAddr is where a new session connects: the primary the last Load
// found, or the store's address.
func (s *Store) sessionAddr() string {
	if s.primary != "" {
		return s.primary
	}
	return s.addr
}

// oneConn is the store's client settings for one connection to addr.
func (s *Store) oneConn(addr string) client.Config {
	cfg := s.clientCfg
	cfg.Addr, cfg.PoolSize = addr, 1
	return cfg
}

// RowsAt is Rows read from the server at addr instead: another node of a
// cluster (after a failover, the new primary) holding the rows the last
// Load set.
func (s *Store) RowsAt(ctx context.Context, addr string) ([]inventory.Row, error) {
	cfg := s.clientCfg
	cfg.Addr = addr
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return s.rowsVia(ctx, c)
}

func (s *Store) rowsVia(ctx context.Context, c *client.Client) ([]inventory.Row, error) {
	if !s.loaded {
		return nil, ErrNotLoaded
	}
	cn, err := c.Conn(ctx)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer cn.Close()
	out := make([]inventory.Row, 0, len(s.keys))
	ops := make([]inventory.Op, 0, loadChunk)
	results := make([]inventory.Result, loadChunk)
	for i := 0; i < len(s.keys); i += loadChunk {
		ops = ops[:0]
		for _, k := range s.keys[i:min(i+loadChunk, len(s.keys))] {
			ops = append(ops, inventory.Get(k))
		}
		if err := cn.Pipeline(ctx, ops, results); err != nil {
			return nil, s.wrap(err)
		}
		for j, r := range results[:len(ops)] {
			switch r.Code {
			case inventory.CodeOK:
				out = append(out, inventory.Row{Key: ops[j].Key, Count: r.Count, Price: r.Price})
			case inventory.CodeNotFound:
				// Loaded rows are never deleted; a missing one means the
				// server lost it, which the checker must see as such.
			default:
				return nil, fmt.Errorf("store/remote: reading row %v: %v %s", ops[j].Key, r.Code, r.Detail)
			}
		}
	}
	return out, nil
}

// Session opens one worker's connection (with Options.Shared, a handle on
// the shared one).
func (s *Store) Session(ctx context.Context) (store.Session, error) {
	if s.sh != nil {
		if _, _, err := s.sh.get(); err != nil {
			return nil, s.wrap(err)
		}
		se := &sharedSession{store: s}
		se.OpCheckout.Do = se.do
		return se, nil
	}
	c, err := client.New(s.oneConn(s.sessionAddr()))
	if err != nil {
		return nil, fmt.Errorf("store/remote: %w", err)
	}
	se := &Session{store: s, client: c, depth: s.cfg.Pipeline}
	se.OpCheckout.Do = se.do
	if _, err := se.connection(ctx); err != nil {
		c.Close()
		return nil, err
	}
	se.release() // connected, and idle in the session's pool
	return se, nil
}

// Close closes the connections and stops the server this store started
// (SIGTERM: it makes its journal durable and exits), removing its
// temporary data directory.
func (s *Store) Close() error {
	if s.sh != nil {
		s.sh.close()
	}
	if s.client != nil {
		s.client.Close()
	}
	return s.stopChild()
}

func (s *Store) stopChild() error {
	if s.child == nil {
		return nil
	}
	err := s.child.Stop(s.cfg.Timeout)
	s.child = nil
	return err
}

// wrap marks errors of a server that cannot be reached.
func (s *Store) wrap(err error) error {
	var se *client.ServerError
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store/remote: %w", err)
	}
	if errors.Is(err, client.ErrConnect) || errors.Is(err, client.ErrClosed) {
		return fmt.Errorf("%w: allot at %s: %v", store.ErrServerDown, s.addr, err)
	}
	return fmt.Errorf("store/remote: %w", err)
}
