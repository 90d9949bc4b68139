package naive

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"allot/inventory"
	"allot/store"
	"allot/store/postgres"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

func sqlText(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("naive: no embedded sql/" + name + ".sql")
	}
	return string(b)
}

func init() {
	store.Register(store.Registration{
		Name:   "naive-postgres",
		About:  "control: PostgreSQL read then write, no lock; oversells, to prove the checker",
		Server: store.ServerPostgres,
		Open: func(ctx context.Context, cfg store.Config) (store.Store, error) {
			return Open(ctx, cfg, "naive")
		},
	})
}

// Store is the postgres adapter's store (Load, Rows, Close, ServerPID) on
// a table without the count check, with naive sessions. It holds the
// adapter rather than embedding it, so that it offers none of the
// adapter's other capabilities (records, search, checkout): those would
// run the adapter's correct, locking code under the control's name.
type Store struct {
	pg *postgres.Store
}

var _ store.ServerProcess = (*Store)(nil)

// Load replaces the table's rows (postgres.Store.Load).
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error { return s.pg.Load(ctx, rows) }

// Rows reads back every row.
func (s *Store) Rows(ctx context.Context) ([]inventory.Row, error) { return s.pg.Rows(ctx) }

// Describe names the server and says that this is the control.
func (s *Store) Describe(ctx context.Context) (string, error) {
	d, err := s.pg.Describe(ctx)
	if err != nil {
		return "", err
	}
	return "control, read then write with no lock: " + d, nil
}

// ServerPID returns the PostgreSQL server's pid (store.ServerProcess).
func (s *Store) ServerPID(ctx context.Context) (int, error) { return s.pg.ServerPID(ctx) }

// Close closes the pool.
func (s *Store) Close() error { return s.pg.Close() }

// Open opens the naive store on the table in schema.
func Open(ctx context.Context, cfg store.Config, schema string) (*Store, error) {
	pg, err := postgres.Open(ctx, cfg, postgres.Options{
		Schema:  schema,
		NoCheck: true,
		Statements: map[string]string{
			"naive_read":  sqlText("read"),
			"naive_write": sqlText("write"),
			"naive_row":   sqlText("row"),
		},
	})
	if err != nil {
		return nil, err
	}
	return &Store{pg: pg}, nil
}

// Session holds one pooled connection for one worker.
func (s *Store) Session(ctx context.Context) (store.Session, error) {
	c, err := s.pg.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Session{conn: c}, nil
}

// Session reads, then writes, with nothing in between to stop another
// session.
type Session struct {
	conn  *pgxpool.Conn
	stock []inventory.Line
}

// Capture reads the group, allocates, and writes each touched row's new
// count in its own statement.
func (s *Session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	if op := inventory.Capture(g, n); op.Check() != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: op.Check()}, nil
	}
	c := s.conn.Conn()
	rows, err := c.Query(ctx, "naive_read", g.SKU, g.Condition, g.Source)
	if err != nil {
		return inventory.Result{}, fmt.Errorf("naive: capture: %w", err)
	}
	s.stock = s.stock[:0]
	for rows.Next() {
		var w inventory.Line
		if err := rows.Scan(&w.Warehouse, &w.Count); err != nil {
			rows.Close()
			return inventory.Result{}, fmt.Errorf("naive: capture: %w", err)
		}
		s.stock = append(s.stock, w)
	}
	if err := rows.Err(); err != nil {
		return inventory.Result{}, fmt.Errorf("naive: capture: %w", err)
	}
	res := inventory.Allocate(s.stock, n, lines)
	if res.Code != inventory.CodeOK {
		return res, nil
	}
	for _, l := range res.Lines {
		var before int64
		for _, w := range s.stock {
			if w.Warehouse == l.Warehouse {
				before = w.Count
			}
		}
		if _, err := c.Exec(ctx, "naive_write", g.SKU, l.Warehouse, g.Condition, g.Source, before-l.Count); err != nil {
			return inventory.Result{}, fmt.Errorf("naive: capture: %w", err)
		}
	}
	return res, nil
}

// Release reads the row and writes count + n.
func (s *Session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	if op := inventory.Release(k, n); op.Check() != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: op.Check()}, nil
	}
	c := s.conn.Conn()
	var count int64
	err := c.QueryRow(ctx, "naive_row", k.SKU, k.Warehouse, k.Condition, k.Source).Scan(&count)
	if errors.Is(err, pgx.ErrNoRows) {
		return inventory.Result{Code: inventory.CodeNotFound}, nil
	}
	if err != nil {
		return inventory.Result{}, fmt.Errorf("naive: release: %w", err)
	}
	if count > inventory.CountMax-n {
		return inventory.Result{Code: inventory.CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}, nil
	}
	if _, err := c.Exec(ctx, "naive_write", k.SKU, k.Warehouse, k.Condition, k.Source, count+n); err != nil {
		return inventory.Result{}, fmt.Errorf("naive: release: %w", err)
	}
	return inventory.Result{Code: inventory.CodeOK, Count: count + n}, nil
}

// Close gives the connection back to the pool.
func (s *Session) Close() error {
	s.conn.Release()
	return nil
}
