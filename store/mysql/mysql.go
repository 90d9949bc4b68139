package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"text/template"

	"github.com/go-sql-driver/mysql"

	"allot/inventory"
	"allot/store"
	"allot/store/sqlrecords"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Engine is a MariaDB storage engine this adapter runs on.
type Engine string

const (
	// InnoDB: row locks, transactions, a redo log.
	InnoDB Engine = "InnoDB"
	// MyISAM: table locks, no transactions; a capture holds LOCK TABLES
	// ... WRITE from its read to its last update.
	MyISAM Engine = "MyISAM"
)

func init() {
	store.Register(store.Registration{
		Name:   "mysql",
		About:  "MariaDB, InnoDB: capture as SELECT ... FOR UPDATE in warehouse order, then UPDATEs, in one transaction",
		Server: store.ServerMariaDB,
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg, Options{Engine: InnoDB})
		},
		Refuses: sqlrecords.PipelineRefusal,
	})
	store.Register(store.Registration{
		Name:   "mysql-myisam",
		About:  "MariaDB, MyISAM: capture under LOCK TABLES ... WRITE (table locks)",
		Server: store.ServerMariaDB,
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg, Options{Engine: MyISAM})
		},
		// Holds and orders need transactions, which MyISAM has not.
		Workloads: []string{"ims", "search", "rw", "kv"},
		Refuses:   myISAMRefusal,
	})
}

// myISAMRefusal is mysql-myisam's Refuses: what package sqlrecords
// refuses of a table-locked engine when the record space is opened, said
// before the store is.
func myISAMRefusal(u store.Use) string {
	if u.Workload != "rw" && u.Workload != "kv" {
		return ""
	}
	if r := sqlrecords.PipelineRefusal(u); r != "" {
		return r
	}
	switch {
	case u.RW.Transactional:
		return "no --transactional in workload " + u.Workload + ": MyISAM has no transactions (its writes autocommit whatever BEGIN says)"
	case u.RW.Lock == store.RWLockSoft:
		return "no --lock soft in workload " + u.Workload + ": MyISAM has no MVCC (every read waits for a writer's table lock, so only --lock hard exists)"
	}
	return ""
}

// Options are what the two registrations (and tests) choose beyond
// store.Config.
type Options struct {
	// Engine is InnoDB (default) or MyISAM.
	Engine Engine
	// Table is the table's name (default rows for InnoDB, rows_myisam for
	// MyISAM, so that both can sit in one database).
	Table string
}

// Validate fills defaults and checks the fields.
func (o *Options) Validate() error {
	if o.Engine == "" {
		o.Engine = InnoDB
	}
	if o.Engine != InnoDB && o.Engine != MyISAM {
		return fmt.Errorf("mysql: unknown engine %q (want InnoDB or MyISAM)", o.Engine)
	}
	if o.Table == "" {
		o.Table = "rows"
		if o.Engine == MyISAM {
			o.Table = "rows_myisam"
		}
	}
	for _, c := range o.Table {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return fmt.Errorf("mysql: table name %q: use lower-case letters, digits and _", o.Table)
		}
	}
	return nil
}

// Store is a mysql adapter's store. One database/sql pool, sized Workers+1:
// every worker holds a connection for its whole life (one Session = one
// connection, its statements prepared once) and Load, Rows and Describe
// still get one.
type Store struct {
	cfg  store.Config
	opt  Options
	db   *sql.DB
	text map[string]string // the sql/ files, with the table filled in
	// catalog is the search workload's table, once loaded (search.go).
	catalog atomic.Pointer[catalogTable]
}

// Open connects (store.Config.Addr: host:port, or a full DSN with user and
// password; default store.MariaDBDSN), sets the durability server-wide
// and makes sure the table exists.
func Open(ctx context.Context, cfg store.Config, opt Options) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	mc, err := mysql.ParseDSN(dsn(cfg.Addr))
	if err != nil {
		return nil, fmt.Errorf("mysql: address %q: %w", cfg.Addr, err)
	}
	mc.Timeout = cfg.Timeout
	// Strict for MyISAM too: a value out of range is an error, never a
	// silent clamp.
	mc.Params = map[string]string{"sql_mode": "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	s := &Store{cfg: cfg, opt: opt, db: sql.OpenDB(connector), text: map[string]string{}}
	s.db.SetMaxOpenConns(cfg.Workers + 1)
	s.db.SetMaxIdleConns(cfg.Workers + 1)
	for _, name := range []string{"schema", "capture_lock", "capture_take", "release", "row_count", "rows"} {
		s.text[name] = s.fill(name)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("%w: mariadb at %s: %w", store.ErrServerDown, mc.Addr, err)
	}
	if _, err := s.db.ExecContext(ctx, s.durabilitySQL()); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("mysql: setting durability %s: %w", cfg.Durability, err)
	}
	if _, err := s.db.ExecContext(ctx, s.text["schema"]); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("mysql: creating table %s: %w", opt.Table, err)
	}
	return s, nil
}

func dsn(addr string) string {
	switch {
	case addr == "":
		return store.MariaDBDSN
	case strings.Contains(addr, "@"):
		return addr
	}
	return withAddr(store.MariaDBDSN, addr)
}

// withAddr returns the DSN base with its address set to addr, whatever
// address base named (a text replacement of one literal address breaks
// silently the day base names another).
func withAddr(base, addr string) string {
	c, err := mysql.ParseDSN(base)
	if err != nil {
		panic("mysql: bad built-in DSN " + base + ": " + err.Error())
	}
	c.Net, c.Addr = "tcp", addr
	return c.FormatDSN()
}

// fill returns sql/<name>.sql with the table and engine filled in.
func (s *Store) fill(name string) string { return s.fillCatalog(name, "") }

// fillCatalog is fill with a catalog table's name too ({{.Catalog}},
// search.go).
func (s *Store) fillCatalog(name, catalog string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("mysql: no embedded sql/" + name + ".sql")
	}
	t := template.Must(template.New(name).Parse(string(b)))
	var out strings.Builder
	err = t.Execute(&out, map[string]any{"Table": s.opt.Table, "Catalog": catalog, "Engine": string(s.opt.Engine), "RowLocks": s.opt.Engine == InnoDB})
	if err != nil {
		panic("mysql: template sql/" + name + ".sql: " + err.Error())
	}
	return out.String()
}

// durabilitySQL is the server-wide setting for the durability. InnoDB:
// innodb_flush_log_at_trx_commit 1 (write and flush the redo log at each
// commit), 2 (write at each commit, flush about once a second), 0 for none
// (both about once a second), and sync_binlog 1 for fsync, else 0: with
// the binary log on, a commit is durable only once the binlog is synced
// too (store.MariaDBSyncBinlog). MyISAM has no log: every statement's changes
// go to the OS at once, and flush=ON syncs them to disk after each
// statement, the nearest it has to fsync; write and none both leave it
// OFF. The binary log takes MyISAM's statements too, so sync_binlog is
// set for MyISAM as for InnoDB: left as an earlier run set it, it alone
// moved a MyISAM write run from about 4,200 ops/s to 1,500 here.
func (s *Store) durabilitySQL() string {
	syncBinlog := store.MariaDBSyncBinlog(s.cfg.Durability)
	if s.opt.Engine == MyISAM {
		flush := "OFF"
		if s.cfg.Durability == store.DurabilityFsync {
			flush = "ON"
		}
		return fmt.Sprintf("SET GLOBAL flush = %s, GLOBAL sync_binlog = %d", flush, syncBinlog)
	}
	return fmt.Sprintf("SET GLOBAL innodb_flush_log_at_trx_commit = %d, GLOBAL sync_binlog = %d",
		store.InnoDBFlushLogAtTrxCommit(s.cfg.Durability), syncBinlog)
}

// loadBatchRows is how many rows one INSERT carries: 6 placeholders each,
// well under the protocol's 65,535 and max_allowed_packet.
const loadBatchRows = 1000

// Load replaces the table with rows: DROP and CREATE, then multi-row
// INSERTs (in one transaction under InnoDB). Every row is checked before
// anything is sent.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	if err := store.CheckRows(rows); err != nil {
		return fmt.Errorf("mysql: load: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mysql: load: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "DROP TABLE IF EXISTS `"+s.opt.Table+"`"); err != nil {
		return fmt.Errorf("mysql: load: %w", err)
	}
	if _, err := c.ExecContext(ctx, s.text["schema"]); err != nil {
		return fmt.Errorf("mysql: load: creating table: %w", err)
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return fmt.Errorf("mysql: load: %w", err)
	}
	args := make([]any, 0, 6*loadBatchRows)
	for start := 0; start < len(rows); start += loadBatchRows {
		batch := rows[start:min(start+loadBatchRows, len(rows))]
		var q strings.Builder
		q.WriteString("INSERT INTO `" + s.opt.Table + "` (sku, warehouse, cond, source, count, price) VALUES ")
		args = args[:0]
		for i := range batch {
			if i > 0 {
				q.WriteString(",")
			}
			q.WriteString("(?,?,?,?,?,?)")
			r := &batch[i]
			args = append(args, r.Key.SKU, r.Key.Warehouse, r.Key.Condition, r.Key.Source, r.Count, r.Price)
		}
		if _, err := c.ExecContext(ctx, q.String(), args...); err != nil {
			c.ExecContext(context.Background(), "ROLLBACK")
			return fmt.Errorf("mysql: load: insert: %w", err)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("mysql: load: commit: %w", err)
	}
	if _, err := c.ExecContext(ctx, "ANALYZE TABLE `"+s.opt.Table+"`"); err != nil {
		return fmt.Errorf("mysql: load: %w", err)
	}
	return nil
}

// Rows reads the whole table.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) {
	rs, err := s.db.QueryContext(ctx, s.text["rows"])
	if err != nil {
		return nil, fmt.Errorf("mysql: rows: %w", err)
	}
	defer rs.Close()
	var out []inventory.Row
	for rs.Next() {
		var r inventory.Row
		if err := rs.Scan(&r.Key.SKU, &r.Key.Warehouse, &r.Key.Condition, &r.Key.Source, &r.Count, &r.Price); err != nil {
			return nil, fmt.Errorf("mysql: rows: %w", err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("mysql: rows: %w", err)
	}
	return out, nil
}

// Describe reads back the server version, the table's engine and the
// settings that decide durability.
func (s *Store) Describe(ctx context.Context) (string, error) {
	var version, engine string
	var flushLog, flush, logBin, syncBinlog int
	err := s.db.QueryRowContext(ctx, `SELECT VERSION(), @@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.flush,
		@@GLOBAL.log_bin, @@GLOBAL.sync_binlog,
		(SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?)`, s.opt.Table).
		Scan(&version, &flushLog, &flush, &logBin, &syncBinlog, &engine)
	if err != nil {
		return "", fmt.Errorf("mysql: describe: %w", err)
	}
	binlog := "binlog off"
	if logBin == 1 {
		binlog = fmt.Sprintf("binlog on, sync_binlog=%d", syncBinlog)
	}
	if engine == "MyISAM" {
		return fmt.Sprintf("MariaDB %s, table %s MyISAM, flush=%s, %s (table locks)", version, s.opt.Table, map[int]string{0: "OFF", 1: "ON"}[flush], binlog), nil
	}
	return fmt.Sprintf("MariaDB %s, table %s %s, innodb_flush_log_at_trx_commit=%d, %s, sessions READ-COMMITTED", version, s.opt.Table, engine, flushLog, binlog), nil
}

// Close drops the catalog table the store loaded, if any, and closes the
// pool.
func (s *Store) Close() error {
	err := s.dropCatalog()
	return errors.Join(err, s.db.Close())
}

// conflictRetriesMax bounds how often one op is retried after a deadlock.
const conflictRetriesMax = 100

// isConflict reports whether err is a deadlock (1213): InnoDB rolled the
// transaction back and it may be retried.
func isConflict(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213
}
