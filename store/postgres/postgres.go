package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"allot/inventory"
	"allot/store"
	"allot/store/sqlrecords"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// SQL returns the statement in sql/<name>.sql. The files are part of the
// binary, so a missing one is a programming error.
func SQL(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("postgres: no embedded sql/" + name + ".sql")
	}
	return string(b)
}

func init() {
	store.Register(store.Registration{
		Name:   "postgres",
		About:  "PostgreSQL: capture as SELECT ... FOR UPDATE in warehouse order, then UPDATEs, in one transaction",
		Server: store.ServerPostgres,
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg, Options{})
		},
		Refuses: sqlrecords.PipelineRefusal,
	})
}

// Options are what the postgres and naive-postgres adapters (and tests)
// choose beyond store.Config.
type Options struct {
	// Schema holds the table (created if missing and set as search_path);
	// empty means public.
	Schema string
	// NoCheck drops the CHECK (count >= 0) constraint: the naive adapter
	// must be able to show an oversell rather than fail on it.
	NoCheck bool
	// Statements are prepared on every connection under their map key, in
	// addition to this package's own.
	Statements map[string]string
}

// Store is the postgres adapter's store; naive-postgres builds on it.
//
// One pool serves everything: sized Workers+1 so that every worker holds a
// connection for its whole life (one Session = one connection) and Load,
// Rows and Describe still get one. Every connection sets its durability
// and prepares the statements once, when it is opened.
type Store struct {
	cfg  store.Config
	opt  Options
	pool *pgxpool.Pool
	// catalog is the search workload's table, once loaded (search.go).
	catalog atomic.Pointer[catalogTable]
	// fsyncBefore is the server's fsync before Open switched it for the
	// durability ("" when it ran with it already): Close puts it back.
	fsyncBefore string
}

// statements are this package's prepared statements, by name.
var statements = []string{"capture_lock", "capture_take", "release", "row_count"}

// Open connects to the server (store.Config.Addr: host:port, or a full
// postgres:// DSN; default store.PostgresDSN), makes sure the table
// exists, logged or unlogged as the durability asks, and that the server
// runs with the fsync the durability asks (setFsync). Every connection
// sets synchronous_commit for the durability.
func Open(ctx context.Context, cfg store.Config, opt Options) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(dsn(cfg.Addr))
	if err != nil {
		return nil, fmt.Errorf("postgres: address %q: %w", cfg.Addr, err)
	}
	pc.MaxConns = int32(cfg.Workers + 1)
	pc.MinConns = 0
	pc.ConnConfig.ConnectTimeout = cfg.Timeout
	sync := store.PostgresSynchronousCommit(cfg.Durability)
	pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		setup := "SET synchronous_commit = " + sync
		if opt.Schema != "" {
			setup += "; SET search_path = " + pgx.Identifier{opt.Schema}.Sanitize()
		}
		if _, err := c.Exec(ctx, setup); err != nil {
			return err
		}
		for _, name := range statements {
			if _, err := c.Prepare(ctx, name, SQL(name)); err != nil {
				return fmt.Errorf("preparing %s: %w", name, err)
			}
		}
		for name, text := range opt.Statements {
			if _, err := c.Prepare(ctx, name, text); err != nil {
				return fmt.Errorf("preparing %s: %w", name, err)
			}
		}
		return nil
	}
	s := &Store{cfg: cfg, opt: opt}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	// The schema must exist before a connection can prepare statements on
	// its table, so it is made over a plain connection first.
	if err := ensureTable(ctx, pc.ConnConfig.Copy(), opt, cfg.Durability); err != nil {
		return nil, err
	}
	before, err := setFsync(ctx, pc.ConnConfig.Copy(), store.PostgresFsync(cfg.Durability), cfg.Durability)
	if err != nil {
		return nil, err
	}
	if before != store.PostgresFsync(cfg.Durability) {
		s.fsyncBefore = before
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}

// dsn turns store.Config.Addr into a connection string.
func dsn(addr string) string {
	switch {
	case addr == "":
		return store.PostgresDSN
	case strings.Contains(addr, "://"):
		return addr
	}
	return withAddr(store.PostgresDSN, addr)
}

// withAddr returns the URL-form DSN base with its host:port set to addr,
// whatever host and port base named (a text replacement of one literal
// address breaks silently the day base names another).
func withAddr(base, addr string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic("postgres: bad built-in DSN " + base + ": " + err.Error())
	}
	u.Host = addr
	return u.String()
}

// ensureTable creates the schema and table if missing and switches an
// existing table between logged and unlogged to match the durability.
func ensureTable(ctx context.Context, cc *pgx.ConnConfig, opt Options, d store.Durability) error {
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("%w: postgres at %s:%d: %w", store.ErrServerDown, cc.Host, cc.Port, err)
	}
	defer c.Close(context.Background())
	if opt.Schema != "" {
		ident := pgx.Identifier{opt.Schema}.Sanitize()
		if _, err := c.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident+"; SET search_path = "+ident); err != nil {
			return fmt.Errorf("postgres: creating schema %s: %w", opt.Schema, err)
		}
	}
	var persistence *string
	if err := c.QueryRow(ctx, "SELECT relpersistence::text FROM pg_class WHERE oid = to_regclass('rows')").Scan(&persistence); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: looking for table rows: %w", err)
	}
	unlogged := d == store.DurabilityNone
	if persistence == nil {
		if _, err := c.Exec(ctx, schemaSQL(opt, unlogged)); err != nil {
			return fmt.Errorf("postgres: creating table rows: %w", err)
		}
		return nil
	}
	if (*persistence == "u") != unlogged {
		alter := "ALTER TABLE rows SET LOGGED"
		if unlogged {
			alter = "ALTER TABLE rows SET UNLOGGED"
		}
		if _, err := c.Exec(ctx, alter); err != nil {
			return fmt.Errorf("postgres: %s: %w", alter, err)
		}
	}
	return nil
}

func schemaSQL(opt Options, unlogged bool) string {
	t := template.Must(template.New("schema").Parse(SQL("schema")))
	var b strings.Builder
	if err := t.Execute(&b, map[string]bool{"Unlogged": unlogged, "Check": !opt.NoCheck}); err != nil {
		panic("postgres: schema template: " + err.Error())
	}
	return b.String()
}

// Pool is the connection pool, for adapters built on this one.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Load replaces the table with rows: DROP and CREATE (so that the table is
// logged or unlogged as the durability asks), then COPY, in one
// transaction. Every row is checked before anything is sent.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	if err := store.CheckRows(rows); err != nil {
		return fmt.Errorf("postgres: load: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: load: %w", err)
	}
	defer c.Release()
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: load: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS rows; "+schemaSQL(s.opt, s.cfg.Durability == store.DurabilityNone)); err != nil {
		return fmt.Errorf("postgres: load: recreating table rows: %w", err)
	}
	src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		return []any{r.Key.SKU, r.Key.Warehouse, r.Key.Condition, r.Key.Source, r.Count, r.Price}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"rows"}, []string{"sku", "warehouse", "cond", "source", "count", "price"}, src); err != nil {
		return fmt.Errorf("postgres: load: COPY: %w", err)
	}
	if _, err := tx.Exec(ctx, "ANALYZE rows"); err != nil {
		return fmt.Errorf("postgres: load: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: load: commit: %w", err)
	}
	return nil
}

// Rows reads the whole table.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) {
	rs, err := s.pool.Query(ctx, SQL("rows"))
	if err != nil {
		return nil, fmt.Errorf("postgres: rows: %w", err)
	}
	var out []inventory.Row
	for rs.Next() {
		var r inventory.Row
		if err := rs.Scan(&r.Key.SKU, &r.Key.Warehouse, &r.Key.Condition, &r.Key.Source, &r.Count, &r.Price); err != nil {
			rs.Close()
			return nil, fmt.Errorf("postgres: rows: %w", err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("postgres: rows: %w", err)
	}
	return out, nil
}

// Describe reads back the server version and the settings that decide
// durability: the server's fsync and a session's synchronous_commit.
func (s *Store) Describe(ctx context.Context) (string, error) {
	var version, sync, fsync, persistence, schema string
	err := s.pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('synchronous_commit'),
		current_setting('fsync'), relpersistence::text, current_schema()
		FROM pg_class WHERE oid = to_regclass('rows')`).Scan(&version, &sync, &fsync, &persistence, &schema)
	if err != nil {
		return "", fmt.Errorf("postgres: describe: %w", err)
	}
	table := "logged"
	if persistence == "u" {
		table = "unlogged"
	}
	return fmt.Sprintf("PostgreSQL %s, synchronous_commit=%s, fsync=%s, table %s.rows %s", version, sync, fsync, schema, table), nil
}

// setFsync makes the server at cc run with fsync = want (on or off) and
// returns what it ran with before; d names the durability asking, for the
// error. fsync is the whole server's and only its configuration sets it,
// so a server that runs with another is switched the way MariaDB's
// adapter switches its global settings: ALTER SYSTEM SET fsync and
// pg_reload_conf(), as a superuser (this connection's role if it is one,
// else store.PostgresSuperuser on the same server, as services connects),
// then the setting is read back until the server has reloaded it, so that
// every connection opened after setFsync runs with it. A server that
// already runs with want is left alone, so a role without those rights
// works on a server set up beforehand. Where the switch cannot be made
// the error wraps store.ErrDurabilityMismatch and names the statements to
// run (the bench then asks services to switch the project's server).
//
// services owns the setting in the configuration file it writes, and
// resets ALTER SYSTEM's fsync whenever it starts or switches the server
// (an `up` that finds the server in the mode asked leaves it: the value
// it runs with is then right, if from the other file). The setting is
// the server's: two runs at once in different modes change it under each
// other (as MariaDB's globals), and each run's description is read when
// it starts.
func setFsync(ctx context.Context, cc *pgx.ConnConfig, want string, d store.Durability) (string, error) {
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return "", fmt.Errorf("%w: postgres at %s:%d: %w", store.ErrServerDown, cc.Host, cc.Port, err)
	}
	defer c.Close(context.Background())
	var before, super, managed string
	if err := c.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('is_superuser'), coalesce(current_setting($1, true), '')",
		store.PostgresManagedSetting).Scan(&before, &super, &managed); err != nil {
		return "", fmt.Errorf("postgres: reading fsync: %w", err)
	}
	if before == want {
		return before, nil
	}
	if managed != "on" {
		// ALTER SYSTEM outlives the run: fsync=off left on someone's
		// server would put its every commit at the mercy of a power cut.
		return "", fsyncMismatch(cc, before, want, d, fmt.Errorf("allot changes the fsync only of a server allot services runs (%s = on in its configuration), and this one is not", store.PostgresManagedSetting))
	}
	as := c
	if super != "on" {
		sc := cc.Copy()
		sc.User, sc.Password = store.PostgresSuperuser, ""
		if as, err = pgx.ConnectConfig(ctx, sc); err != nil {
			return "", fsyncMismatch(cc, before, want, d, err)
		}
		defer as.Close(context.Background())
	}
	// ALTER SYSTEM refuses to run in a transaction block, so it goes alone.
	if _, err := as.Exec(ctx, "ALTER SYSTEM SET fsync = "+want); err != nil {
		return "", fsyncMismatch(cc, before, want, d, err)
	}
	if err := reloadUntil(ctx, as, want); err != nil {
		return "", fsyncMismatch(cc, before, want, d, err)
	}
	return before, nil
}

// reloadUntil asks the server to reload its configuration and reads fsync
// back on c until it is want. The postmaster rereads the files and only
// then signals each backend, c's among them, to reread them before its
// next statement: once c reads want, every backend started since does.
func reloadUntil(ctx context.Context, c *pgx.Conn, want string) error {
	if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	for {
		var got string
		if err := c.QueryRow(ctx, "SELECT current_setting('fsync')").Scan(&got); err != nil {
			return err
		}
		if got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server still runs with fsync=%s after a reload: %w", got, ctx.Err())
		case <-time.After(reloadPollInterval):
		}
	}
}

// reloadPollInterval is how often reloadUntil reads fsync back; a reload
// takes a few milliseconds.
const reloadPollInterval = 5 * time.Millisecond

func fsyncMismatch(cc *pgx.ConnConfig, got, want string, d store.Durability, err error) error {
	return fmt.Errorf("%w: postgres at %s:%d runs with fsync=%s, durability %s needs fsync=%s, and setting it failed (%v): "+
		"as a superuser run ALTER SYSTEM SET fsync = %s; SELECT pg_reload_conf(); (allot services up --durability %s postgres does it for the project's server)",
		store.ErrDurabilityMismatch, cc.Host, cc.Port, got, d, want, err, want, d)
}

// Close drops the catalog table the store loaded, if any, and closes the
// pool.
func (s *Store) Close() error {
	err := s.dropCatalog()
	if s.fsyncBefore != "" {
		// The server's fsync as the store found it (rw's Close does the
		// same): a write run leaves no fsync=off behind it. Said, not
		// fatal: a server the kill audit took down cannot be reached.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		if _, ferr := setFsync(ctx, s.pool.Config().ConnConfig.Copy(), s.fsyncBefore, s.cfg.Durability); ferr != nil {
			err = errors.Join(err, fmt.Errorf("postgres: putting back the server's fsync=%s: %w", s.fsyncBefore, ferr))
		}
		cancel()
	}
	s.pool.Close()
	return err
}

// Session holds one pooled connection for one worker.
func (s *Store) Session(ctx context.Context) (store.Session, error) {
	c, err := s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Session{conn: c, store: s}, nil
}

// Acquire takes a connection from the pool, for a session.
func (s *Store) Acquire(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: %w", store.ErrServerDown, err)
	}
	return c, nil
}

// conflictRetriesMax bounds how often one op is retried after a deadlock
// or a serialization failure.
const conflictRetriesMax = 100

// IsConflict reports whether err is a deadlock (40P01) or a serialization
// failure (40001): the transaction was rolled back and may be retried.
func IsConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
