package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"

	"allot/inventory"
	"allot/store"
)

// Checkout the way a PostgreSQL shop does it (store.Checkouter,
// store.Orderer): a holds table whose primary key is the hold id, the
// hold's lines in hold_lines, and an order_keys table for ORDER's
// idempotency keys, each claimed by INSERT ... ON CONFLICT DO NOTHING in
// the same transaction as the stock it takes. All the rows of a cart are
// locked by one SELECT ... ORDER BY key FOR UPDATE, so carts never
// deadlock; the allocation is computed in Go (store.AllocateCart) over the
// locked counts. Holds expire by a sweeper in the bench process (what a
// shop runs as a worker or a cron job): every SweepInterval one
// transaction claims up to SweepBatch live holds past their deadline with
// FOR UPDATE SKIP LOCKED, marks them expired and gives their units back.
// Deadlines are the server's clock (clock_timestamp()).
//
// The alternative of one PL/pgSQL function per call would save a round
// trip; the statements are kept in Go and sql/ so that they read like the
// capture path.

// Hold states as the holds table stores them (store.HoldState values).
const (
	stateHeld      = int16(store.HoldHeld)
	stateConfirmed = int16(store.HoldConfirmed)
	stateCancelled = int16(store.HoldCancelled)
	stateExpired   = int16(store.HoldExpired)
)

// PrepareCheckout (re)creates the checkout tables, empty, logged or
// unlogged as rows are, and starts the sweeper on a connection of its own
// (the pool is sized for the workers).
func (s *Store) PrepareCheckout(ctx context.Context, cfg store.CheckoutConfig) (func() error, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := template.Must(template.New("checkout").Parse(SQL("checkout_schema")))
	var b strings.Builder
	if err := t.Execute(&b, map[string]bool{"Unlogged": s.cfg.Durability == store.DurabilityNone}); err != nil {
		panic("postgres: checkout schema template: " + err.Error())
	}
	if _, err := s.pool.Exec(ctx, b.String()); err != nil {
		return nil, fmt.Errorf("postgres: creating the checkout tables: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("%w: postgres: the sweeper's connection: %w", store.ErrServerDown, err)
	}
	setup := "SET synchronous_commit = " + store.PostgresSynchronousCommit(s.cfg.Durability)
	if s.opt.Schema != "" {
		setup += "; SET search_path = " + pgx.Identifier{s.opt.Schema}.Sanitize()
	}
	if _, err := conn.Exec(ctx, setup); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("postgres: the sweeper's connection: %w", err)
	}
	sw := &sweeper{conn: conn, cfg: cfg}
	return store.StartSweeper(cfg, sw.sweep, func() { conn.Close(context.Background()) }), nil
}

// sweeper expires holds past their deadline on its own connection.
type sweeper struct {
	conn *pgx.Conn
	cfg  store.CheckoutConfig
}

// sweep expires up to SweepBatch holds in one transaction.
func (sw *sweeper) sweep(ctx context.Context) (int, error) {
	tx, err := sw.conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, SQL("sweep_due"), sw.cfg.SweepBatch)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	b := &pgx.Batch{}
	b.Queue(SQL("holds_lock_rows"), ids)
	b.Queue(SQL("holds_return"), ids)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, err
	}
	return len(ids), tx.Commit(ctx)
}

// cartArrays are a cart's columns, as unnest takes them.
type cartArrays struct {
	skus, warehouses, conds, sources []string
	counts                           []int64
}

func groupArrays(demand []store.Demand) (skus, conds, sources []string) {
	for _, d := range demand {
		skus = append(skus, d.Group.SKU)
		conds = append(conds, d.Group.Condition)
		sources = append(sources, d.Group.Source)
	}
	return
}

func lineArrays(lines []store.HoldLine) cartArrays {
	var a cartArrays
	for _, l := range lines {
		a.skus = append(a.skus, l.Row.SKU)
		a.warehouses = append(a.warehouses, l.Row.Warehouse)
		a.conds = append(a.conds, l.Row.Condition)
		a.sources = append(a.sources, l.Row.Source)
		a.counts = append(a.counts, l.Count)
	}
	return a
}

// lockCart locks the rows of demand's groups (in the open transaction)
// and allocates the cart over them into res.
func lockCart(ctx context.Context, br pgx.BatchResults, demand []store.Demand, res *store.HoldResult) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	stock := map[inventory.GroupKey][]inventory.Line{}
	for rows.Next() {
		var g inventory.GroupKey
		var l inventory.Line
		if err := rows.Scan(&g.SKU, &g.Condition, &g.Source, &l.Warehouse, &l.Count); err != nil {
			rows.Close()
			return err
		}
		stock[g] = append(stock[g], l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	store.AllocateCart(demand, func(i int) []inventory.Line { return stock[demand[i].Group] }, res)
	return nil
}

// Hold reserves lines under hold: two round trips (BEGIN, claim the id,
// lock the rows; then take, record the lines and the deadline, COMMIT).
func (s *Session) Hold(ctx context.Context, hold string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckHold(hold, ttl, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	for attempt := 0; ; attempt++ {
		err := s.hold(ctx, hold, ttl, lines, res)
		if err != nil && IsConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		return err
	}
}

func (s *Session) hold(ctx context.Context, hold string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	c := s.conn.Conn()
	cart := store.EncodeCart(lines)
	demand := store.SumCart(lines, nil)
	skus, conds, sources := groupArrays(demand)
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(SQL("hold_insert"), hold, cart)
	b.Queue(SQL("cart_lock"), skus, conds, sources)
	br := c.SendBatch(ctx, b)
	_, err := br.Exec()
	claimed := false
	if err == nil {
		var one int
		err = br.QueryRow().Scan(&one)
		claimed = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	}
	if err == nil {
		err = lockCart(ctx, br, demand, res)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s.abort(ctx, "hold", err)
	}
	if !claimed {
		if err := s.rollback(ctx); err != nil {
			return fmt.Errorf("postgres: hold: rollback: %w", err)
		}
		return s.holdRepeat(ctx, hold, cart, res)
	}
	if res.Code != store.CheckoutOK {
		// Nothing held: the id stays free.
		if err := s.rollback(ctx); err != nil {
			return fmt.Errorf("postgres: hold: rollback: %w", err)
		}
		return nil
	}
	a := lineArrays(res.Lines)
	b = &pgx.Batch{}
	b.Queue(SQL("cart_take"), a.skus, a.warehouses, a.conds, a.sources, a.counts)
	b.Queue(SQL("hold_finish"), hold, ttl.Milliseconds(), a.skus, a.warehouses, a.conds, a.sources, a.counts)
	b.Queue("commit")
	br = c.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&res.ExpiresAtMS)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s.abort(ctx, "hold", err)
	}
	return nil
}

// holdRepeat answers a HOLD whose id exists: the original reply if the
// lines are the same, else a mismatch.
func (s *Session) holdRepeat(ctx context.Context, hold, cart string, res *store.HoldResult) error {
	var info store.HoldInfo
	info.Lines = res.Lines[:0]
	found, storedCart, err := s.holdGet(ctx, hold, &info)
	res.Reset()
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("postgres: hold %s: the id was taken and is now gone", hold)
	}
	if storedCart != cart {
		res.Code, res.Detail = store.CheckoutMismatch, "hold "+hold+" exists with other lines"
		return nil
	}
	res.Code, res.ExpiresAtMS, res.Lines = store.CheckoutOK, info.ExpiresAtMS, info.Lines
	return nil
}

func (s *Session) holdGet(ctx context.Context, hold string, info *store.HoldInfo) (found bool, cart string, err error) {
	c := s.conn.Conn()
	b := &pgx.Batch{}
	b.Queue(SQL("hold_get"), hold)
	b.Queue(SQL("hold_lines"), hold)
	br := c.SendBatch(ctx, b)
	defer br.Close()
	var state int16
	err = br.QueryRow().Scan(&state, &info.ExpiresAtMS, &cart)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("postgres: hold.get %s: %w", hold, err)
	}
	info.State = store.HoldState(state)
	rows, err := br.Query()
	if err != nil {
		return false, "", fmt.Errorf("postgres: hold.get %s: %w", hold, err)
	}
	info.Lines = info.Lines[:0]
	for rows.Next() {
		var l store.HoldLine
		if err := rows.Scan(&l.Row.SKU, &l.Row.Warehouse, &l.Row.Condition, &l.Row.Source, &l.Count); err != nil {
			rows.Close()
			return false, "", fmt.Errorf("postgres: hold.get %s: %w", hold, err)
		}
		info.Lines = append(info.Lines, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, "", fmt.Errorf("postgres: hold.get %s: %w", hold, err)
	}
	return true, cart, nil
}

// HoldGet reads a hold back. A hold past its deadline that the sweeper
// has not reached yet is still held.
func (s *Session) HoldGet(ctx context.Context, hold string, info *store.HoldInfo) (bool, error) {
	found, _, err := s.holdGet(ctx, hold, info)
	return found, err
}

// Confirm confirms a live hold in one statement; a hold past its deadline
// is expired even before the sweeper comes.
func (s *Session) Confirm(ctx context.Context, hold string) (store.CheckoutCode, error) {
	if d := inventory.CheckID(hold); d != "" {
		return store.CheckoutInvalid, nil
	}
	c := s.conn.Conn()
	var one int
	err := c.QueryRow(ctx, SQL("hold_confirm"), hold).Scan(&one)
	if err == nil {
		return store.CheckoutOK, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("postgres: confirm %s: %w", hold, err)
	}
	var state int16
	var expiresAt int64
	var cart string
	err = c.QueryRow(ctx, SQL("hold_get"), hold).Scan(&state, &expiresAt, &cart)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.CheckoutNotFound, nil
	case err != nil:
		return 0, fmt.Errorf("postgres: confirm %s: %w", hold, err)
	}
	switch state {
	case stateConfirmed:
		return store.CheckoutOK, nil
	case stateCancelled:
		return store.CheckoutCancelled, nil
	}
	return store.CheckoutExpired, nil
}

// Cancel locks the hold, gives a held one's units back and marks it
// cancelled (expired if its deadline passed), in one transaction (two
// round trips).
func (s *Session) Cancel(ctx context.Context, hold string) (store.CheckoutCode, error) {
	if d := inventory.CheckID(hold); d != "" {
		return store.CheckoutInvalid, nil
	}
	for attempt := 0; ; attempt++ {
		code, err := s.cancel(ctx, hold)
		if err != nil && IsConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		return code, err
	}
}

func (s *Session) cancel(ctx context.Context, hold string) (store.CheckoutCode, error) {
	c := s.conn.Conn()
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(SQL("hold_lock"), hold)
	br := c.SendBatch(ctx, b)
	_, err := br.Exec()
	var state int16
	var due bool
	found := true
	if err == nil {
		err = br.QueryRow().Scan(&state, &due)
		if errors.Is(err, pgx.ErrNoRows) {
			found, err = false, nil
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, s.abort(ctx, "cancel", err)
	}
	if !found || state != stateHeld {
		if err := s.rollback(ctx); err != nil {
			return 0, fmt.Errorf("postgres: cancel: rollback: %w", err)
		}
		switch {
		case !found:
			return store.CheckoutNotFound, nil
		case state == stateConfirmed:
			return store.CheckoutConfirmed, nil
		}
		return store.CheckoutOK, nil
	}
	ids := []string{hold}
	finished := stateCancelled
	if due {
		finished = stateExpired
	}
	b = &pgx.Batch{}
	b.Queue(SQL("holds_lock_rows"), ids)
	b.Queue(SQL("holds_return"), ids)
	b.Queue(SQL("hold_cancel"), hold, finished)
	b.Queue("commit")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return 0, s.abort(ctx, "cancel", err)
	}
	return store.CheckoutOK, nil
}

// Order takes every line or none in one transaction, its idempotency key
// (if any) claimed in the same transaction and its first reply kept there.
func (s *Session) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckOrder(key, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	for attempt := 0; ; attempt++ {
		err := s.order(ctx, key, lines, res)
		if err != nil && IsConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		return err
	}
}

func (s *Session) order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	c := s.conn.Conn()
	cart := store.EncodeCart(lines)
	demand := store.SumCart(lines, nil)
	skus, conds, sources := groupArrays(demand)
	b := &pgx.Batch{}
	b.Queue("begin")
	if key != "" {
		b.Queue(SQL("order_insert"), key, cart)
	}
	b.Queue(SQL("cart_lock"), skus, conds, sources)
	br := c.SendBatch(ctx, b)
	_, err := br.Exec()
	claimed := true
	if err == nil && key != "" {
		var one int
		err = br.QueryRow().Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			claimed, err = false, nil
		}
	}
	if err == nil {
		err = lockCart(ctx, br, demand, res)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return s.abort(ctx, "order", err)
	}
	if !claimed {
		if err := s.rollback(ctx); err != nil {
			return fmt.Errorf("postgres: order: rollback: %w", err)
		}
		var storedCart, reply string
		if err := c.QueryRow(ctx, SQL("order_get"), key).Scan(&storedCart, &reply); err != nil {
			return fmt.Errorf("postgres: order %s: reading its first reply: %w", key, err)
		}
		if storedCart != cart {
			res.Reset()
			res.Code, res.Detail = store.CheckoutMismatch, "key "+key+" was used with other arguments"
			return nil
		}
		if err := store.DecodeReply(reply, res); err != nil {
			return fmt.Errorf("postgres: order %s: %w", key, err)
		}
		return nil
	}
	b = &pgx.Batch{}
	if res.Code == store.CheckoutOK {
		a := lineArrays(res.Lines)
		b.Queue(SQL("cart_take"), a.skus, a.warehouses, a.conds, a.sources, a.counts)
	}
	if key != "" {
		b.Queue(SQL("order_reply"), key, store.EncodeReply(res))
	}
	b.Queue("commit")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return s.abort(ctx, "order", err)
	}
	return nil
}

var (
	_ store.Checkouter       = (*Session)(nil)
	_ store.Orderer          = (*Session)(nil)
	_ store.CheckoutPreparer = (*Store)(nil)
)
