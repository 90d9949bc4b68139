package tarantool

import (
	"context"
	_ "embed"
	"fmt"
	"sync/atomic"

	gotarantool "github.com/tarantool/go-tarantool/v2"
	"github.com/vmihailenco/msgpack/v5"

	"allot/inventory"
	"allot/store"
)

// Where and as whom the project's own Tarantool is reached.
const (
	AddrDefault = store.TarantoolAddr
	user        = store.TarantoolUser
	password    = store.TarantoolPassword
)

// Bounds on the work of one request to the server.
const (
	// loadChunkRows is how many rows one load call inserts in one
	// transaction, so one WAL write.
	loadChunkRows = 2000
	// rowsPageMax is how many rows one read of Rows returns.
	rowsPageMax = 10000
)

//go:embed allot.lua
var luaSource string

// engine is one of Tarantool's storage engines and the space that uses it.
type engine struct {
	name  string // "memtx" or "vinyl"
	space string
}

func init() {
	for _, r := range []struct {
		name, about string
		engine      engine
	}{
		{"tarantool", "Tarantool memtx (in memory, WAL): capture and release as Lua functions in a transaction",
			engine{name: "memtx", space: "allot_rows"}},
		{"tarantool-vinyl", "Tarantool vinyl (LSM tree on disk): capture and release as Lua functions in a transaction",
			engine{name: "vinyl", space: "allot_rows_vinyl"}},
	} {
		e := r.engine
		store.Register(store.Registration{
			Name:  r.name,
			About: r.about,
			Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
				return open(ctx, cfg, e)
			},
			Server: store.ServerTarantool,
			// Sessions are CheckoutPipeliner only.
			Pipelines: []string{"checkout"},
			Refuses:   rwRefusal,
		})
	}
}

// rwRefusal is the registrations' Refuses: what RWOpen refuses, said
// before the store is opened (the server is taken to run in the
// durability the run asks: the bench restarts it so).
func rwRefusal(u store.Use) string {
	if u.Workload != "rw" && u.Workload != "kv" {
		return ""
	}
	if fsync := u.Durability == store.DurabilityFsync || u.Durability == ""; u.RW.Durable != fsync {
		want := "fsync"
		if !u.RW.Durable {
			want = "write"
		}
		return fmt.Sprintf("workload %s: tarantool runs with wal_mode %s, fixed at its start: --durable=%v needs --durability %s", u.Workload, u.Durability, u.RW.Durable, want)
	}
	return ""
}

// Store is one space of a Tarantool server, reached over one IPROTO
// connection that Load, Rows, Describe and every Session share.
//
// go-tarantool's Connection is safe for concurrent use and multiplexes:
// requests from many goroutines go out in shared writes and their replies
// are matched by id, and Tarantool runs the requests of one connection in
// parallel fibers. That is how the connector is meant to be used. A
// connection per session was measured and rejected: with 16 workers on the
// seed preset (durability write, this two-core machine under load) it ran
// 16,400-17,600 ops/s against 30,000-58,000 for one shared connection,
// and two or four shared connections did no better than one.
type Store struct {
	conn   *gotarantool.Connection
	cfg    store.Config
	engine engine
	// catalog names the search workload's space, once loaded (search.go).
	catalog atomic.Pointer[string]
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Describer = (*Store)(nil)
)

// open connects to the server at cfg.Addr (AddrDefault if empty), checks
// that its wal_mode is cfg.Durability, defines the Lua functions and
// creates the space if needed.
func open(ctx context.Context, cfg store.Config, e engine) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Addr == "" {
		cfg.Addr = AddrDefault
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	conn, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{conn: conn, cfg: cfg, engine: e}
	if err := s.setup(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// connect opens one IPROTO connection. It does not reconnect: a lost
// connection fails the ops in flight, and the bench reports it.
func connect(ctx context.Context, cfg store.Config) (*gotarantool.Connection, error) {
	dialer := gotarantool.NetDialer{Address: cfg.Addr, User: user, Password: password}
	conn, err := gotarantool.Connect(ctx, dialer, gotarantool.Opts{
		// Bounds every request; ops do not carry the caller's context (see
		// session.call).
		Timeout: cfg.Timeout,
		// The adapter calls functions by name and never resolves spaces
		// through the connector, so the schema is not fetched.
		SkipSchema: true,
	})
	if err != nil {
		return nil, fmt.Errorf("tarantool: %w: %s: %v", store.ErrServerDown, cfg.Addr, err)
	}
	return conn, nil
}

func (s *Store) setup(ctx context.Context) error {
	var mode []string
	err := s.conn.Do(gotarantool.NewEvalRequest("return box.cfg.wal_mode").Context(ctx)).GetTyped(&mode)
	if err != nil || len(mode) != 1 {
		return fmt.Errorf("tarantool: reading box.cfg.wal_mode: %v (reply %v)", err, mode)
	}
	if mode[0] != string(s.cfg.Durability) {
		return fmt.Errorf("%w: tarantool at %s runs with wal_mode %s, durability %s was asked for (restart it with wal_mode=%s)",
			store.ErrDurabilityMismatch, s.cfg.Addr, mode[0], s.cfg.Durability, s.cfg.Durability)
	}
	if _, err := s.conn.Do(gotarantool.NewEvalRequest(luaSource).Context(ctx)).Get(); err != nil {
		return fmt.Errorf("tarantool: defining the Lua functions: %w", err)
	}
	call := gotarantool.NewCallRequest("allot.setup").Args([]any{s.engine.space, s.engine.name}).Context(ctx)
	if _, err := s.conn.Do(call).Get(); err != nil {
		return fmt.Errorf("tarantool: creating space %s: %w", s.engine.space, err)
	}
	return nil
}

// Load empties the space, and the holds and order keys of checkout beside
// it (allot.truncate), and inserts rows, one transaction per chunk.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	if err := store.CheckRows(rows); err != nil {
		return fmt.Errorf("tarantool: load: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	truncate := gotarantool.NewCallRequest("allot.truncate").Args([]any{s.engine.space}).Context(ctx)
	if _, err := s.conn.Do(truncate).Get(); err != nil {
		return fmt.Errorf("tarantool: truncating %s: %w", s.engine.space, err)
	}
	for start := 0; start < len(rows); start += loadChunkRows {
		chunk := loadArgs{space: s.engine.space, rows: rows[start:min(start+loadChunkRows, len(rows))]}
		call := gotarantool.NewCallRequest("allot.load").Args(&chunk).Context(ctx)
		if _, err := s.conn.Do(call).Get(); err != nil {
			return fmt.Errorf("tarantool: load: rows %d..%d: %w", start, start+len(chunk.rows)-1, err)
		}
	}
	return nil
}

// Rows reads the space page by page in primary key order.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var out []inventory.Row
	after := []string{}
	for {
		var page rowsReply
		call := gotarantool.NewCallRequest("allot.rows").Args([]any{s.engine.space, after, rowsPageMax}).Context(ctx)
		if err := s.conn.Do(call).GetTyped(&page); err != nil {
			return nil, fmt.Errorf("tarantool: rows of %s: %w", s.engine.space, err)
		}
		out = append(out, page.rows...)
		if len(page.rows) < rowsPageMax {
			return out, nil
		}
		k := page.rows[len(page.rows)-1].Key
		after = []string{k.SKU, k.Warehouse, k.Condition, k.Source}
	}
}

// Session returns a worker's handle on the shared connection.
func (s *Store) Session(ctx context.Context) (store.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.conn.ClosedNow() {
		return nil, fmt.Errorf("tarantool: %w: %s: the connection is closed", store.ErrServerDown, s.cfg.Addr)
	}
	return &session{conn: s.conn, space: s.engine.space, store: s}, nil
}

// Describe names the server version, the engine and the wal_mode read back
// from the server.
func (s *Store) Describe(ctx context.Context) (string, error) {
	var reply [][]string
	call := gotarantool.NewCallRequest("allot.describe").Context(ctx)
	if err := s.conn.Do(call).GetTyped(&reply); err != nil || len(reply) != 1 || len(reply[0]) != 2 {
		return "", fmt.Errorf("tarantool: describe: %v (reply %v)", err, reply)
	}
	return fmt.Sprintf("tarantool %s, engine %s, wal_mode %s", reply[0][0], s.engine.name, reply[0][1]), nil
}

// Close drops the catalog space the store loaded, if any, and closes the
// connection, and with it every session.
func (s *Store) Close() error {
	err := s.dropCatalog()
	if cerr := s.conn.Close(); cerr != nil {
		return fmt.Errorf("tarantool: close: %w", cerr)
	}
	return err
}

// loadArgs encodes the arguments of allot.load: the space name and the rows
// as tuples, without building an []any per row.
type loadArgs struct {
	space string
	rows  []inventory.Row
}

func (a *loadArgs) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := enc.EncodeString(a.space); err != nil {
		return err
	}
	if err := enc.EncodeArrayLen(len(a.rows)); err != nil {
		return err
	}
	for i := range a.rows {
		r := &a.rows[i]
		if err := enc.EncodeArrayLen(6); err != nil {
			return err
		}
		for _, s := range []string{r.Key.SKU, r.Key.Warehouse, r.Key.Condition, r.Key.Source} {
			if err := enc.EncodeString(s); err != nil {
				return err
			}
		}
		if err := enc.EncodeUint(uint64(r.Count)); err != nil {
			return err
		}
		if err := enc.EncodeUint(uint64(r.Price)); err != nil {
			return err
		}
	}
	return nil
}

// rowsReply decodes allot.rows's reply: one return value, an array of
// tuples.
type rowsReply struct {
	rows []inventory.Row
}

func (r *rowsReply) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("rows reply has %d values, want 1", n)
	}
	if n, err = dec.DecodeArrayLen(); err != nil {
		return err
	}
	r.rows = make([]inventory.Row, n)
	for i := range r.rows {
		row := &r.rows[i]
		fields, err := dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		if fields != 6 {
			return fmt.Errorf("row tuple has %d fields, want 6", fields)
		}
		for _, dst := range []*string{&row.Key.SKU, &row.Key.Warehouse, &row.Key.Condition, &row.Key.Source} {
			if *dst, err = dec.DecodeString(); err != nil {
				return err
			}
		}
		if row.Count, err = dec.DecodeInt64(); err != nil {
			return err
		}
		if row.Price, err = dec.DecodeInt64(); err != nil {
			return err
		}
	}
	return nil
}
