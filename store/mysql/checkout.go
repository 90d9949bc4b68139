package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"allot/inventory"
	"allot/store"
)

// Checkout the way a MariaDB/InnoDB shop does it (store.Checkouter,
// store.Orderer): tables <rows>_holds (the hold id is the primary key, so
// it is its own idempotency key), <rows>_hold_lines and <rows>_order_keys,
// each claimed by INSERT ... ON DUPLICATE KEY UPDATE in the same
// transaction as the stock it takes; all of a cart's rows locked by one
// SELECT ... ORDER BY key FOR UPDATE through the group index; a sweeper in
// the bench process that claims due holds with FOR UPDATE SKIP LOCKED
// (MariaDB 10.6+) and gives their units back. Deadlines are the server's
// clock.
//
// Statements carry their values as hex literals (X'...') in the text
// rather than as placeholders: a cart has 1..64 groups, so each shape would
// be a prepared statement of its own, and the driver without
// interpolation prepares, executes and closes a statement per call (three
// round trips). Hex literals compare as bytes with the VARBINARY columns
// and cannot break out of the literal.
//
// MyISAM has no transactions: a mysql-myisam session refuses checkout.

const (
	stateHeld      = int(store.HoldHeld)
	stateConfirmed = int(store.HoldConfirmed)
	stateCancelled = int(store.HoldCancelled)
	stateExpired   = int(store.HoldExpired)
)

// nowMS is the server's clock in milliseconds since the epoch.
const nowMS = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

func hexLit(s string) string { return "X'" + hex.EncodeToString([]byte(s)) + "'" }

// checkoutTables are the names of the checkout tables beside rows table t.
func checkoutTables(t string) (holds, lines, keys string) {
	return "`" + t + "_holds`", "`" + t + "_hold_lines`", "`" + t + "_order_keys`"
}

func (o Options) rows() string { return "`" + o.Table + "`" }

// errMyISAM is what checkout answers on a MyISAM table.
var errMyISAM = errors.New("mysql: checkout needs transactions, and MyISAM has none (use the InnoDB store, mysql)")

// PrepareCheckout (re)creates the checkout tables, empty, and starts the
// sweeper on a connection pool of its own (the store's pool is sized for
// the workers).
func (s *Store) PrepareCheckout(ctx context.Context, cfg store.CheckoutConfig) (func() error, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if s.opt.Engine != InnoDB {
		return nil, errMyISAM
	}
	holds, lines, keys := checkoutTables(s.opt.Table)
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + holds + ", " + lines + ", " + keys,
		"CREATE TABLE " + holds + ` (
			id VARBINARY(64) NOT NULL PRIMARY KEY,
			state TINYINT NOT NULL,
			expires_at BIGINT NOT NULL,
			cart BLOB NOT NULL,
			KEY due (state, expires_at)
		) ENGINE = InnoDB`,
		"CREATE TABLE " + lines + ` (
			hold VARBINARY(64) NOT NULL,
			pos INT NOT NULL,
			sku VARBINARY(64) NOT NULL, warehouse VARBINARY(64) NOT NULL,
			cond VARBINARY(64) NOT NULL, source VARBINARY(64) NOT NULL,
			count BIGINT NOT NULL,
			PRIMARY KEY (hold, pos)
		) ENGINE = InnoDB`,
		"CREATE TABLE " + keys + ` (
			k VARBINARY(64) NOT NULL PRIMARY KEY,
			cart BLOB NOT NULL,
			reply BLOB NOT NULL
		) ENGINE = InnoDB`,
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("mysql: creating the checkout tables: %w", err)
		}
	}
	mc, err := mysql.ParseDSN(dsn(s.cfg.Addr))
	if err != nil {
		return nil, fmt.Errorf("mysql: address %q: %w", s.cfg.Addr, err)
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: mysql: the sweeper's connection: %w", store.ErrServerDown, err)
	}
	sw := &sweeper{se: &Session{conn: conn, opt: s.opt}, cfg: cfg}
	return store.StartSweeper(cfg, sw.sweep, func() { conn.Close(); db.Close() }), nil
}

// sweeper expires holds past their deadline on its own connection.
type sweeper struct {
	se  *Session
	cfg store.CheckoutConfig
}

// sweep expires up to SweepBatch due holds in one transaction.
func (sw *sweeper) sweep(ctx context.Context) (int, error) {
	se := sw.se
	holds, _, _ := checkoutTables(se.opt.Table)
	for attempt := 0; ; attempt++ {
		n, err := func() (int, error) {
			if _, err := se.conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
				return 0, err
			}
			rows, err := se.conn.QueryContext(ctx, "SELECT id FROM "+holds+" WHERE state = 1 AND expires_at <= "+nowMS+
				" ORDER BY state, expires_at LIMIT "+strconv.Itoa(sw.cfg.SweepBatch)+" FOR UPDATE SKIP LOCKED")
			if err != nil {
				return 0, se.rollback(err)
			}
			var ids []string
			for rows.Next() {
				var id []byte
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return 0, se.rollback(err)
				}
				ids = append(ids, string(id))
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return 0, se.rollback(err)
			}
			if len(ids) == 0 {
				return 0, se.rollback(nil)
			}
			if err := se.giveBack(ctx, ids, stateExpired); err != nil {
				return 0, se.rollback(err)
			}
			if _, err := se.conn.ExecContext(ctx, "COMMIT"); err != nil {
				return 0, se.rollback(err)
			}
			return len(ids), nil
		}()
		if err != nil && isConflict(err) && attempt < conflictRetriesMax {
			continue
		}
		return n, err
	}
}

// rollback ends a transaction that will not commit and returns err.
func (s *Session) rollback(err error) error {
	if _, rerr := s.conn.ExecContext(context.Background(), "ROLLBACK"); err == nil {
		return rerr
	}
	return err
}

// giveBack returns the units of holds ids (locked held holds) to the rows
// they left, capped at 2^62-1, and marks the holds state, in the open
// transaction: read their lines, lock those rows in sorted key order, add.
func (s *Session) giveBack(ctx context.Context, ids []string, state int) error {
	holds, linesT, _ := checkoutTables(s.opt.Table)
	in := make([]string, len(ids))
	for i, id := range ids {
		in[i] = hexLit(id)
	}
	list := strings.Join(in, ",")
	rows, err := s.conn.QueryContext(ctx, "SELECT sku, warehouse, cond, source, SUM(count) FROM "+linesT+
		" WHERE hold IN ("+list+") GROUP BY sku, warehouse, cond, source")
	if err != nil {
		return err
	}
	var back []store.HoldLine
	for rows.Next() {
		var sku, wh, cond, src []byte
		var n int64
		if err := rows.Scan(&sku, &wh, &cond, &src, &n); err != nil {
			rows.Close()
			return err
		}
		back = append(back, store.HoldLine{Row: inventory.RowKey{SKU: string(sku), Warehouse: string(wh), Condition: string(cond), Source: string(src)}, Count: n})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(back) > 0 {
		if err := s.lockRows(ctx, back); err != nil {
			return err
		}
		if _, err := s.conn.ExecContext(ctx, "UPDATE "+s.opt.rows()+" r JOIN ("+derived(back)+") t"+
			" ON r.sku = t.sku AND r.warehouse = t.warehouse AND r.cond = t.cond AND r.source = t.source"+
			" SET r.count = LEAST(r.count + t.n, 4611686018427387903)"); err != nil {
			return err
		}
	}
	_, err = s.conn.ExecContext(ctx, "UPDATE "+holds+" SET state = "+strconv.Itoa(state)+" WHERE id IN ("+list+")")
	return err
}

// lockRows locks rows in sorted key order (sku, cond, source, warehouse),
// the order cart locks take through the group index.
func (s *Session) lockRows(ctx context.Context, lines []store.HoldLine) error {
	keys := make([]inventory.RowKey, len(lines))
	for i, l := range lines {
		keys[i] = l.Row
	}
	slices.SortFunc(keys, func(a, b inventory.RowKey) int {
		return strings.Compare(a.SKU+"\x00"+a.Condition+"\x00"+a.Source+"\x00"+a.Warehouse, b.SKU+"\x00"+b.Condition+"\x00"+b.Source+"\x00"+b.Warehouse)
	})
	tuples := make([]string, len(keys))
	for i, k := range keys {
		tuples[i] = "(" + hexLit(k.SKU) + "," + hexLit(k.Condition) + "," + hexLit(k.Source) + "," + hexLit(k.Warehouse) + ")"
	}
	rows, err := s.conn.QueryContext(ctx, "SELECT count FROM "+s.opt.rows()+" FORCE INDEX (row_group)"+
		" WHERE (sku, cond, source, warehouse) IN ("+strings.Join(tuples, ",")+")"+
		" ORDER BY sku, cond, source, warehouse FOR UPDATE")
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// derived is a derived table of lines: (sku, warehouse, cond, source, n).
func derived(lines []store.HoldLine) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT %s AS sku, %s AS warehouse, %s AS cond, %s AS source, %d AS n",
			hexLit(l.Row.SKU), hexLit(l.Row.Warehouse), hexLit(l.Row.Condition), hexLit(l.Row.Source), l.Count)
	}
	return b.String()
}

// lockCart locks every row of the cart's groups through the group index in
// sorted key order and allocates the cart over them into res.
func (s *Session) lockCart(ctx context.Context, demand []store.Demand, res *store.HoldResult) error {
	tuples := make([]string, len(demand))
	for i, d := range demand {
		tuples[i] = "(" + hexLit(d.Group.SKU) + "," + hexLit(d.Group.Condition) + "," + hexLit(d.Group.Source) + ")"
	}
	rows, err := s.conn.QueryContext(ctx, "SELECT sku, cond, source, warehouse, count FROM "+s.opt.rows()+" FORCE INDEX (row_group)"+
		" WHERE (sku, cond, source) IN ("+strings.Join(tuples, ",")+")"+
		" ORDER BY sku, cond, source, warehouse FOR UPDATE")
	if err != nil {
		return err
	}
	defer rows.Close()
	stock := map[inventory.GroupKey][]inventory.Line{}
	for rows.Next() {
		var sku, cond, src, wh []byte
		var count int64
		if err := rows.Scan(&sku, &cond, &src, &wh, &count); err != nil {
			return err
		}
		g := inventory.GroupKey{SKU: string(sku), Condition: string(cond), Source: string(src)}
		stock[g] = append(stock[g], inventory.Line{Warehouse: string(wh), Count: count})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	store.AllocateCart(demand, func(i int) []inventory.Line { return stock[demand[i].Group] }, res)
	return nil
}

// take subtracts an allocation from its locked rows.
func (s *Session) takeLines(ctx context.Context, lines []store.HoldLine) error {
	_, err := s.conn.ExecContext(ctx, "UPDATE "+s.opt.rows()+" r JOIN ("+derived(lines)+") t"+
		" ON r.sku = t.sku AND r.warehouse = t.warehouse AND r.cond = t.cond AND r.source = t.source"+
		" SET r.count = r.count - t.n")
	return err
}

// retry runs f again after a deadlock, counting it.
func (s *Session) retry(f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err != nil && isConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		return err
	}
}

// Hold reserves lines under hold in one transaction.
func (s *Session) Hold(ctx context.Context, hold string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	if s.opt.Engine != InnoDB {
		return errMyISAM
	}
	if d := store.CheckHold(hold, ttl, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	return s.retry(func() error { return s.hold(ctx, hold, ttl, lines, res) })
}

func (s *Session) hold(ctx context.Context, hold string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	holds, linesT, _ := checkoutTables(s.opt.Table)
	cart := store.EncodeCart(lines)
	if _, err := s.conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return fmt.Errorf("mysql: hold %s: %w", hold, err)
	}
	r, err := s.conn.ExecContext(ctx, "INSERT INTO "+holds+" (id, state, expires_at, cart) VALUES ("+
		hexLit(hold)+", 1, "+nowMS+" + "+strconv.FormatInt(ttl.Milliseconds(), 10)+", "+hexLit(cart)+") ON DUPLICATE KEY UPDATE id = id")
	if err != nil {
		return fmt.Errorf("mysql: hold %s: %w", hold, s.rollback(err))
	}
	if n, err := r.RowsAffected(); err != nil || n != 1 {
		if err := s.rollback(err); err != nil {
			return fmt.Errorf("mysql: hold %s: %w", hold, err)
		}
		return s.holdRepeat(ctx, hold, cart, res)
	}
	demand := store.SumCart(lines, nil)
	if err := s.lockCart(ctx, demand, res); err != nil {
		return fmt.Errorf("mysql: hold %s: %w", hold, s.rollback(err))
	}
	if res.Code != store.CheckoutOK {
		// Nothing held: the id stays free.
		return s.rollback(nil)
	}
	if err := s.takeLines(ctx, res.Lines); err != nil {
		return fmt.Errorf("mysql: hold %s: %w", hold, s.rollback(err))
	}
	var b strings.Builder
	for i, l := range res.Lines {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%s, %d, %s, %s, %s, %s, %d)", hexLit(hold), i, hexLit(l.Row.SKU), hexLit(l.Row.Warehouse), hexLit(l.Row.Condition), hexLit(l.Row.Source), l.Count)
	}
	if _, err := s.conn.ExecContext(ctx, "INSERT INTO "+linesT+" (hold, pos, sku, warehouse, cond, source, count) VALUES "+b.String()); err != nil {
		return fmt.Errorf("mysql: hold %s: %w", hold, s.rollback(err))
	}
	if err := s.conn.QueryRowContext(ctx, "SELECT expires_at FROM "+holds+" WHERE id = "+hexLit(hold)).Scan(&res.ExpiresAtMS); err != nil {
		return fmt.Errorf("mysql: hold %s: %w", hold, s.rollback(err))
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("mysql: hold %s: commit: %w", hold, s.rollback(err))
	}
	return nil
}

// holdRepeat answers a HOLD whose id exists.
func (s *Session) holdRepeat(ctx context.Context, hold, cart string, res *store.HoldResult) error {
	var info store.HoldInfo
	info.Lines = res.Lines[:0]
	found, stored, err := s.holdGet(ctx, hold, &info)
	res.Reset()
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("mysql: hold %s: the id was taken and is now gone", hold)
	}
	if stored != cart {
		res.Code, res.Detail = store.CheckoutMismatch, "hold "+hold+" exists with other lines"
		return nil
	}
	res.Code, res.ExpiresAtMS, res.Lines = store.CheckoutOK, info.ExpiresAtMS, info.Lines
	return nil
}

func (s *Session) holdGet(ctx context.Context, hold string, info *store.HoldInfo) (bool, string, error) {
	holds, linesT, _ := checkoutTables(s.opt.Table)
	var state int
	var cart []byte
	err := s.conn.QueryRowContext(ctx, "SELECT state, expires_at, cart FROM "+holds+" WHERE id = "+hexLit(hold)).Scan(&state, &info.ExpiresAtMS, &cart)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("mysql: hold.get %s: %w", hold, err)
	}
	info.State = store.HoldState(state)
	rows, err := s.conn.QueryContext(ctx, "SELECT sku, warehouse, cond, source, count FROM "+linesT+" WHERE hold = "+hexLit(hold)+" ORDER BY pos")
	if err != nil {
		return false, "", fmt.Errorf("mysql: hold.get %s: %w", hold, err)
	}
	defer rows.Close()
	info.Lines = info.Lines[:0]
	for rows.Next() {
		var sku, wh, cond, src []byte
		var n int64
		if err := rows.Scan(&sku, &wh, &cond, &src, &n); err != nil {
			return false, "", fmt.Errorf("mysql: hold.get %s: %w", hold, err)
		}
		info.Lines = append(info.Lines, store.HoldLine{Row: inventory.RowKey{SKU: string(sku), Warehouse: string(wh), Condition: string(cond), Source: string(src)}, Count: n})
	}
	if err := rows.Err(); err != nil {
		return false, "", fmt.Errorf("mysql: hold.get %s: %w", hold, err)
	}
	return true, string(cart), nil
}

// HoldGet reads a hold back. A hold past its deadline that the sweeper has
// not reached yet is still held.
func (s *Session) HoldGet(ctx context.Context, hold string, info *store.HoldInfo) (bool, error) {
	if s.opt.Engine != InnoDB {
		return false, errMyISAM
	}
	found, _, err := s.holdGet(ctx, hold, info)
	return found, err
}

// Confirm confirms a live hold in one statement; one past its deadline is
// expired even before the sweeper comes.
func (s *Session) Confirm(ctx context.Context, hold string) (store.CheckoutCode, error) {
	if s.opt.Engine != InnoDB {
		return 0, errMyISAM
	}
	if inventory.CheckID(hold) != "" {
		return store.CheckoutInvalid, nil
	}
	holds, _, _ := checkoutTables(s.opt.Table)
	// One statement, but it moves the hold in the due index, where the
	// sweeper and new holds take locks too: a deadlock is retried.
	var r sql.Result
	err := s.retry(func() error {
		var err error
		r, err = s.conn.ExecContext(ctx, "UPDATE "+holds+" SET state = 2 WHERE id = "+hexLit(hold)+" AND state = 1 AND expires_at > "+nowMS)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql: confirm %s: %w", hold, err)
	}
	if n, err := r.RowsAffected(); err == nil && n == 1 {
		return store.CheckoutOK, nil
	}
	var state int
	err = s.conn.QueryRowContext(ctx, "SELECT state FROM "+holds+" WHERE id = "+hexLit(hold)).Scan(&state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.CheckoutNotFound, nil
	case err != nil:
		return 0, fmt.Errorf("mysql: confirm %s: %w", hold, err)
	case state == stateConfirmed:
		return store.CheckoutOK, nil
	case state == stateCancelled:
		return store.CheckoutCancelled, nil
	}
	return store.CheckoutExpired, nil
}

// Cancel locks the hold, gives a live one's units back and marks it
// cancelled, in one transaction.
func (s *Session) Cancel(ctx context.Context, hold string) (store.CheckoutCode, error) {
	if s.opt.Engine != InnoDB {
		return 0, errMyISAM
	}
	if inventory.CheckID(hold) != "" {
		return store.CheckoutInvalid, nil
	}
	var code store.CheckoutCode
	err := s.retry(func() error {
		var err error
		code, err = s.cancel(ctx, hold)
		return err
	})
	return code, err
}

func (s *Session) cancel(ctx context.Context, hold string) (store.CheckoutCode, error) {
	holds, _, _ := checkoutTables(s.opt.Table)
	if _, err := s.conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return 0, fmt.Errorf("mysql: cancel %s: %w", hold, err)
	}
	var state int
	var due bool
	err := s.conn.QueryRowContext(ctx, "SELECT state, expires_at <= "+nowMS+" FROM "+holds+" WHERE id = "+hexLit(hold)+" FOR UPDATE").Scan(&state, &due)
	if errors.Is(err, sql.ErrNoRows) {
		return store.CheckoutNotFound, s.rollback(nil)
	}
	if err != nil {
		return 0, fmt.Errorf("mysql: cancel %s: %w", hold, s.rollback(err))
	}
	switch state {
	case stateConfirmed:
		return store.CheckoutConfirmed, s.rollback(nil)
	case stateCancelled, stateExpired:
		return store.CheckoutOK, s.rollback(nil)
	}
	// Past its deadline (the sweeper has not come yet) it is expired, not
	// cancelled: Confirm already answers expired for it.
	finished := stateCancelled
	if due {
		finished = stateExpired
	}
	if err := s.giveBack(ctx, []string{hold}, finished); err != nil {
		return 0, fmt.Errorf("mysql: cancel %s: %w", hold, s.rollback(err))
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, fmt.Errorf("mysql: cancel %s: commit: %w", hold, s.rollback(err))
	}
	return store.CheckoutOK, nil
}

// Order takes every line or none in one transaction, its key (if any)
// claimed in the same transaction with its first reply.
func (s *Session) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if s.opt.Engine != InnoDB {
		return errMyISAM
	}
	if d := store.CheckOrder(key, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	return s.retry(func() error { return s.order(ctx, key, lines, res) })
}

func (s *Session) order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	_, _, keys := checkoutTables(s.opt.Table)
	cart := store.EncodeCart(lines)
	if _, err := s.conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
		return fmt.Errorf("mysql: order %s: %w", key, err)
	}
	if key != "" {
		r, err := s.conn.ExecContext(ctx, "INSERT INTO "+keys+" (k, cart, reply) VALUES ("+hexLit(key)+", "+hexLit(cart)+", '') ON DUPLICATE KEY UPDATE k = k")
		if err != nil {
			return fmt.Errorf("mysql: order %s: %w", key, s.rollback(err))
		}
		if n, err := r.RowsAffected(); err != nil || n != 1 {
			if err := s.rollback(err); err != nil {
				return fmt.Errorf("mysql: order %s: %w", key, err)
			}
			var storedCart, reply []byte
			if err := s.conn.QueryRowContext(ctx, "SELECT cart, reply FROM "+keys+" WHERE k = "+hexLit(key)).Scan(&storedCart, &reply); err != nil {
				return fmt.Errorf("mysql: order %s: reading its first reply: %w", key, err)
			}
			if string(storedCart) != cart {
				res.Reset()
				res.Code, res.Detail = store.CheckoutMismatch, "key "+key+" was used with other arguments"
				return nil
			}
			if err := store.DecodeReply(string(reply), res); err != nil {
				return fmt.Errorf("mysql: order %s: %w", key, err)
			}
			return nil
		}
	}
	if err := s.lockCart(ctx, store.SumCart(lines, nil), res); err != nil {
		return fmt.Errorf("mysql: order %s: %w", key, s.rollback(err))
	}
	if res.Code == store.CheckoutOK {
		if err := s.takeLines(ctx, res.Lines); err != nil {
			return fmt.Errorf("mysql: order %s: %w", key, s.rollback(err))
		}
	}
	if key != "" {
		if _, err := s.conn.ExecContext(ctx, "UPDATE "+keys+" SET reply = "+hexLit(store.EncodeReply(res))+" WHERE k = "+hexLit(key)); err != nil {
			return fmt.Errorf("mysql: order %s: %w", key, s.rollback(err))
		}
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("mysql: order %s: commit: %w", key, s.rollback(err))
	}
	return nil
}

var (
	_ store.Checkouter       = (*Session)(nil)
	_ store.Orderer          = (*Session)(nil)
	_ store.CheckoutPreparer = (*Store)(nil)
)
