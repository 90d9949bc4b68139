package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"allot/inventory"
)

// This file is the bench-facing face of DESIGN.md "Checkout: holds,
// orders, idempotency (contract v2)": the optional Session capabilities
// Checkouter (holds) and Orderer (multi-line orders), found by type
// assertion as Pipeliner is, their outcome codes, and the pure helpers the
// peer adapters share (cart checks, summing same-group lines, allocating a
// cart over locked stock).

// Checkout limits. They are part of the wire contract.
const (
	// CartLinesMax is the most lines a hold or an order may carry.
	CartLinesMax = 64
	// HoldTTLMax is the longest a hold may live.
	HoldTTLMax = 7 * 24 * time.Hour
)

// CheckoutCode is the outcome of a checkout call. Like inventory.Code it
// is a stable value, never an error: a call that returns one was decided by
// the store (applied, or refused without changing anything).
type CheckoutCode uint8

const (
	// CheckoutOK: applied (or, for a repeat, applied the first time and
	// answered again now).
	CheckoutOK CheckoutCode = 0
	// CheckoutInsufficient: some line's group, its same-group lines summed,
	// holds fewer units than asked. HoldResult.Short and Available say
	// which line and what its group held. Nothing changed.
	CheckoutInsufficient CheckoutCode = 1
	// CheckoutNotFound: no such hold (never made, or past retention).
	CheckoutNotFound CheckoutCode = 2
	// CheckoutInvalid: the request broke an input rule; HoldResult.Detail
	// (or the error-free Detail of the call) says which. Nothing changed.
	CheckoutInvalid CheckoutCode = 3
	// CheckoutExpired: CONFIRM of a hold whose deadline passed.
	CheckoutExpired CheckoutCode = 4
	// CheckoutCancelled: CONFIRM of a cancelled hold.
	CheckoutCancelled CheckoutCode = 5
	// CheckoutConfirmed: CANCEL of a confirmed hold.
	CheckoutConfirmed CheckoutCode = 6
	// CheckoutMismatch: a hold id (or an order's idempotency key) already
	// used with other lines. Nothing changed.
	CheckoutMismatch CheckoutCode = 7
)

func (c CheckoutCode) String() string {
	switch c {
	case CheckoutOK:
		return "ok"
	case CheckoutInsufficient:
		return "insufficient"
	case CheckoutNotFound:
		return "not_found"
	case CheckoutInvalid:
		return "invalid"
	case CheckoutExpired:
		return "expired"
	case CheckoutCancelled:
		return "cancelled"
	case CheckoutConfirmed:
		return "confirmed"
	case CheckoutMismatch:
		return "mismatch"
	}
	return fmt.Sprintf("checkout_code(%d)", uint8(c))
}

// HoldState is the state of a hold (HOLD.GET): the state machine's, so
// that a store's answer and the engine's are one type with one set of
// names (HoldUnknown when HoldGet finds none).
type HoldState = inventory.HoldState

const (
	HoldUnknown   = inventory.HoldUnknown
	HoldHeld      = inventory.HoldHeld
	HoldConfirmed = inventory.HoldConfirmed
	HoldCancelled = inventory.HoldCancelled
	HoldExpired   = inventory.HoldExpired
)

// ParseHoldState parses the wire name of a state (held, confirmed,
// cancelled, expired).
func ParseHoldState(s string) (HoldState, error) {
	switch s {
	case "held":
		return HoldHeld, nil
	case "confirmed":
		return HoldConfirmed, nil
	case "cancelled":
		return HoldCancelled, nil
	case "expired":
		return HoldExpired, nil
	}
	return HoldUnknown, fmt.Errorf("store: unknown hold state %q", s)
}

// CartLine is one line of a hold or an order: n units of a group.
type CartLine struct {
	Group inventory.GroupKey
	N     int64
}

// HoldLine is one row's share of a hold or an order.
type HoldLine struct {
	Row   inventory.RowKey
	Count int64
}

// HoldResult is what Hold and Order fill in.
type HoldResult struct {
	Code CheckoutCode
	// ExpiresAtMS is the hold's deadline in milliseconds since the Unix
	// epoch by the store's clock (Hold only; for a repeat, the original
	// deadline).
	ExpiresAtMS int64
	// Lines, on CheckoutOK, is the allocation in request-line order: each
	// group once, at the position of its first line, with its rows in
	// allocation order (ascending byte order of the warehouse). The slice
	// is the caller's buffer, reused (Lines[:0]).
	Lines []HoldLine
	// Short, on CheckoutInsufficient, is the index of the first line (in
	// request order) whose group's summed demand exceeds its total, and
	// Available that group's total before the request (0 for a group with
	// no rows).
	Short     int
	Available int64
	// Detail says what was wrong, for CheckoutInvalid and CheckoutMismatch.
	Detail string
}

// Reset empties r for reuse, keeping the Lines buffer.
func (r *HoldResult) Reset() {
	*r = HoldResult{Lines: r.Lines[:0]}
}

// HoldInfo is what HoldGet fills in.
type HoldInfo struct {
	State       HoldState
	ExpiresAtMS int64
	// Lines as in HoldResult.Lines; the caller's buffer, reused.
	Lines []HoldLine
}

// Checkouter is an optional Session capability: holds with a deadline,
// confirmed, cancelled or expired, exactly as DESIGN.md "Checkout: holds,
// orders, idempotency (contract v2)" says. The bench's checkout workload
// runs only on sessions that implement it.
//
// Semantics every implementation keeps:
//
//   - Hold takes the lines' units out of their rows under the hold id, all
//     or nothing. Lines naming the same group are summed before allocation
//     (an order with the same product twice must not oversell); each group
//     is allocated with the domain rule (warehouses in ascending byte
//     order, min(count, remaining) from each). If any group is short,
//     nothing is held and the result names the first short line in request
//     order and its group's total before the request.
//   - The deadline is the store's clock at the time the hold was applied +
//     ttl (whole milliseconds, 1 ms .. HoldTTLMax). When it passes, the
//     store returns the units to the rows they left (an engine in the
//     batch that first carries a time >= deadline; a peer by its sweeper).
//   - The hold id is its own idempotency key: a repeat Hold with the same
//     id and the same lines in the same order returns the original result
//     (its original deadline and allocation; the repeat's ttl is ignored)
//     in every state, expired included, and takes nothing; other lines are
//     CheckoutMismatch.
//   - Confirm: held -> confirmed (units leave inventory for good). Repeats
//     and other states: confirmed -> OK, cancelled -> CheckoutCancelled,
//     expired -> CheckoutExpired, unknown -> CheckoutNotFound.
//   - Cancel: held -> cancelled (units go back to the rows they left);
//     a held hold past its deadline that expiry has not reached yet ->
//     expired (units back, as the engine expires it before the cancel),
//     so that Confirm answers CheckoutExpired before and after.
//     cancelled or expired -> OK, confirmed -> CheckoutConfirmed, unknown
//     -> CheckoutNotFound.
//   - A finished hold is remembered at least as long as the bench runs
//     (the engine's retention window).
//
// Errors: a returned error means the outcome is unknown (the request may
// or may not have been applied: a lost connection, a timeout); the caller
// may repeat the same call, which is safe because every call above is
// idempotent by its hold id. Invalid input is CheckoutInvalid, never an
// error.
//
// Concurrency: like Session, one goroutine per session.
type Checkouter interface {
	// Hold reserves lines under hold for ttl and fills res (res.Lines is
	// reused as its buffer).
	Hold(ctx context.Context, hold string, ttl time.Duration, lines []CartLine, res *HoldResult) error
	// Confirm confirms hold.
	Confirm(ctx context.Context, hold string) (CheckoutCode, error)
	// Cancel cancels hold.
	Cancel(ctx context.Context, hold string) (CheckoutCode, error)
	// HoldGet reads hold into info (info.Lines is reused as its buffer);
	// found is false for an unknown hold. A hold whose deadline passed but
	// which the store has not expired yet is still HoldHeld: the bench
	// measures expiry lag by polling it.
	HoldGet(ctx context.Context, hold string, info *HoldInfo) (found bool, err error)
}

// CheckoutPipeliner is an optional Session capability of a Checkouter
// that keeps many checkout calls in flight at once, as a checkout service
// batching its customers does: the bench's checkout workload with
// --pipeline N > 1 runs only on sessions that implement it (found by type
// assertion, as Pipeliner is).
//
// CheckoutPipeline sends every call, in order, before it awaits any reply,
// then fills each call's reply (Code, and Res for a hold) or its Err. Each
// call means exactly what the Checkouter method of its kind means,
// idempotency included; an invalid hold is answered CheckoutInvalid
// without being sent. The calls of one batch may be applied in any order
// or at once (a server may run them on concurrent fibers): a caller puts
// at most one call per hold in a batch, and sends what follows a reply in
// a later batch.
//
// Errors: a call's Err means that call's outcome is unknown (repeat it,
// which is safe: every call is idempotent by its hold id). A returned
// error means the outcome of every call in the batch is unknown (the
// connection broke); the Err fields are then not meaningful.
type CheckoutPipeliner interface {
	Checkouter
	CheckoutPipeline(ctx context.Context, calls []CheckoutCall) error
}

// CheckoutCallKind is what a CheckoutCall does.
type CheckoutCallKind uint8

const (
	// CallHold is Checkouter.Hold.
	CallHold CheckoutCallKind = iota + 1
	// CallConfirm is Checkouter.Confirm.
	CallConfirm
	// CallCancel is Checkouter.Cancel.
	CallCancel
)

func (k CheckoutCallKind) String() string {
	switch k {
	case CallHold:
		return "hold"
	case CallConfirm:
		return "confirm"
	case CallCancel:
		return "cancel"
	}
	return fmt.Sprintf("checkout_call(%d)", uint8(k))
}

// CheckoutCall is one call of a CheckoutPipeline: its request, and after
// the call its reply.
type CheckoutCall struct {
	Kind CheckoutCallKind
	Hold string
	// TTL and Lines: the hold's (CallHold only).
	TTL   time.Duration
	Lines []CartLine

	// Res is a hold's reply; its Lines are the caller's buffer, reused.
	Res HoldResult
	// Code is the reply's code (for a hold, Res.Code).
	Code CheckoutCode
	// Err, when not nil, means this call's outcome is unknown.
	Err error
}

// Reset clears the reply fields for a new send, keeping Res's buffer.
func (c *CheckoutCall) Reset() {
	c.Res.Reset()
	c.Code, c.Err = 0, nil
}

// Prepare readies call i of a batch for sending: it clears the reply and
// checks the request. A hold or a hold id that breaks an input rule is
// answered CheckoutInvalid here and must not be sent (send is false); a
// call without a kind is an error naming it.
func (c *CheckoutCall) Prepare(i int) (send bool, err error) {
	c.Reset()
	var d string
	switch c.Kind {
	case CallHold:
		d = CheckHold(c.Hold, c.TTL, c.Lines)
	case CallConfirm, CallCancel:
		if d = inventory.CheckID(c.Hold); d != "" {
			d = "hold id " + d
		}
	default:
		return false, fmt.Errorf("store: checkout call %d has no kind (%s)", i, c.Kind)
	}
	if d != "" {
		c.Res.Code, c.Res.Detail, c.Code = CheckoutInvalid, d, CheckoutInvalid
		return false, nil
	}
	return true, nil
}

// PrepareCalls runs Prepare on every call of a batch and hands each call
// to be sent, in order, to send; the first call without a kind stops it
// with an error.
func PrepareCalls(calls []CheckoutCall, send func(i int, c *CheckoutCall)) error {
	for i := range calls {
		c := &calls[i]
		ok, err := c.Prepare(i)
		if err != nil {
			return err
		}
		if ok {
			send(i, c)
		}
	}
	return nil
}

// OpCheckoutPipeline implements CheckoutPipeline for a store that runs
// allot's own ops and pipelines them (the embedded engine, an allot server
// over RESP): each call is one op, all of them handed to Send at once.
// Send is a Pipeliner's Pipeline: an error means the fate of every op is
// unknown.
type OpCheckoutPipeline struct {
	Send func(ctx context.Context, ops []inventory.Op, results []inventory.Result) error

	ops     []inventory.Op
	results []inventory.Result
	at      []int // at[j] is the call op j carries
	demand  []inventory.Demand
}

// CheckoutPipeline implements CheckoutPipeliner.
func (p *OpCheckoutPipeline) CheckoutPipeline(ctx context.Context, calls []CheckoutCall) error {
	p.ops, p.at = p.ops[:0], p.at[:0]
	total := 0
	for i := range calls {
		total += len(calls[i].Lines)
	}
	// One buffer for every hold's demand, never grown below: the ops keep
	// slices of it.
	if cap(p.demand) < total {
		p.demand = make([]inventory.Demand, 0, total)
	}
	p.demand = p.demand[:0]
	err := PrepareCalls(calls, func(i int, c *CheckoutCall) {
		switch c.Kind {
		case CallHold:
			from := len(p.demand)
			for _, l := range c.Lines {
				p.demand = append(p.demand, inventory.Demand{Group: l.Group, N: l.N})
			}
			p.ops = append(p.ops, inventory.Hold(c.Hold, c.TTL.Milliseconds(), p.demand[from:len(p.demand):len(p.demand)]))
		case CallConfirm:
			p.ops = append(p.ops, inventory.Confirm(c.Hold))
		case CallCancel:
			p.ops = append(p.ops, inventory.Cancel(c.Hold))
		}
		p.at = append(p.at, i)
	})
	if err != nil {
		return err
	}
	if len(p.ops) == 0 {
		return nil
	}
	for len(p.results) < len(p.ops) {
		p.results = append(p.results, inventory.Result{})
	}
	if err := p.Send(ctx, p.ops, p.results[:len(p.ops)]); err != nil {
		return err
	}
	for j, i := range p.at {
		c, r := &calls[i], p.results[j]
		if c.Kind == CallHold {
			fillHoldResult(r, &c.Res)
			c.Code = c.Res.Code
		} else {
			c.Code = CheckoutCodeOf(r.Code)
		}
		p.results[j] = inventory.Result{Lines: r.Lines[:0]}
	}
	return nil
}

// Orderer is an optional Session capability: a multi-line capture, all or
// nothing (a hold confirmed in the same step), DESIGN.md's ORDER. Lines
// are summed and allocated exactly as Hold's; res.ExpiresAtMS is 0.
//
// key, when not empty, is the order's idempotency key: the first call with
// a key is applied and its reply remembered, whatever it was (success or
// CheckoutInsufficient); a repeat with the same lines returns that first
// reply and applies nothing; a repeat with other lines is
// CheckoutMismatch. An empty key means no idempotency: a repeat is a new
// order.
//
// Errors mean the outcome is unknown, as for Checkouter: repeat with the
// same key.
type Orderer interface {
	Order(ctx context.Context, key string, lines []CartLine, res *HoldResult) error
}

// EmptyBrancher is an optional Store capability of a store that runs an
// order as a distributed transaction over branch services (dtm's sagas):
// with empty branches every branch answers success and does nothing, so
// that the coordinator's own cost shows (the setting of the published
// saga benchmark). An order then changes no row and its reply has no
// lines; the bench checks exactly that.
type EmptyBrancher interface {
	SetEmptyBranches(empty bool)
}

// CheckoutPreparer is an optional Store capability for stores that keep
// checkout state beside the rows (a holds table, an idempotency table) or
// expire holds with a sweeper outside the server (SQL, Redis): the bench
// calls PrepareCheckout after Load and before opening sessions. It empties
// the store's holds and keys, and starts what expires holds, which runs
// until stop is called or the Store is closed. A store that expires holds
// by itself (allot's engine, a Tarantool fiber) may still implement it to
// empty its holds.
type CheckoutPreparer interface {
	PrepareCheckout(ctx context.Context, cfg CheckoutConfig) (stop func() error, err error)
}

// CheckoutConfig is what PrepareCheckout is given.
type CheckoutConfig struct {
	// SweepInterval is how often a sweeper looks for holds past their
	// deadline (default SweepIntervalDefault). A store with its own expiry
	// clock ignores it.
	SweepInterval time.Duration
	// SweepBatch bounds the holds one sweep expires in one transaction or
	// script (default SweepBatchDefault); a sweep that hit the bound runs
	// again at once.
	SweepBatch int
}

// Sweeper defaults.
const (
	SweepIntervalDefault = 10 * time.Millisecond
	SweepBatchDefault    = 100
)

// Validate fills defaults and checks the fields.
func (c *CheckoutConfig) Validate() error {
	if c.SweepInterval == 0 {
		c.SweepInterval = SweepIntervalDefault
	}
	if c.SweepInterval < time.Millisecond || c.SweepInterval > time.Minute {
		return fmt.Errorf("store: sweep interval must be from 1ms to 1m, got %v", c.SweepInterval)
	}
	if c.SweepBatch == 0 {
		c.SweepBatch = SweepBatchDefault
	}
	if c.SweepBatch < 1 || c.SweepBatch > 100000 {
		return fmt.Errorf("store: sweep batch must be from 1 to 100000, got %d", c.SweepBatch)
	}
	return nil
}

// CheckCart reports what is wrong with a cart, or "" when it is well
// formed: 1..CartLinesMax lines, each a valid group and a quantity of
// 1..inventory.QuantityMax. A group's summed demand is then below 2^37: it
// fits every adapter's 64-bit integers and a Lua double exactly.
func CheckCart(lines []CartLine) string {
	if len(lines) == 0 {
		return "a cart needs at least one line"
	}
	if len(lines) > CartLinesMax {
		return fmt.Sprintf("a cart has at most %d lines, got %d", CartLinesMax, len(lines))
	}
	for i := range lines {
		if d := inventory.CheckGroupKey(lines[i].Group); d != "" {
			return fmt.Sprintf("line %d: %s", i+1, d)
		}
		if d := inventory.CheckQuantity(lines[i].N); d != "" {
			return fmt.Sprintf("line %d: %s", i+1, d)
		}
	}
	return ""
}

// CheckHold reports what is wrong with a hold request, or "".
func CheckHold(hold string, ttl time.Duration, lines []CartLine) string {
	if d := inventory.CheckID(hold); d != "" {
		return "hold id " + d
	}
	if ttl < time.Millisecond || ttl > HoldTTLMax || ttl%time.Millisecond != 0 {
		return "ttl must be a whole number of milliseconds from 1 to 604800000"
	}
	return CheckCart(lines)
}

// Demand is one group's summed demand in a cart.
type Demand struct {
	Group inventory.GroupKey
	// N is the sum of the group's lines.
	N int64
	// First is the index of the group's first line in the cart.
	First int
}

// SumCart sums same-group lines, in the order of each group's first line,
// appending to dst[:0]. Carts are at most 64 lines, so the quadratic scan
// beats a map.
func SumCart(lines []CartLine, dst []Demand) []Demand {
	dst = dst[:0]
next:
	for i, l := range lines {
		for j := range dst {
			if dst[j].Group == l.Group {
				dst[j].N += l.N
				continue next
			}
		}
		dst = append(dst, Demand{Group: l.Group, N: l.N, First: i})
	}
	return dst
}

// AllocateCart applies the domain rule to a cart whose groups' rows the
// caller has locked (or otherwise holds still): stock(i) returns demand
// i's warehouses with their counts in ascending byte order of the warehouse.
// On success res.Lines holds the allocation in request-line order; on
// CheckoutInsufficient res names the first short line. res is reset
// first; it never fails otherwise.
func AllocateCart(demand []Demand, stock func(i int) []inventory.Line, res *HoldResult) {
	res.Reset()
	var buf [8]inventory.Line
	for i, d := range demand {
		a := inventory.Allocate(stock(i), d.N, buf[:0])
		if a.Code != inventory.CodeOK {
			res.Code = CheckoutInsufficient
			res.Short = d.First
			res.Available = a.Available
			res.Lines = res.Lines[:0]
			return
		}
		for _, l := range a.Lines {
			res.Lines = append(res.Lines, HoldLine{Row: d.Group.Row(l.Warehouse), Count: l.Count})
		}
	}
	res.Code = CheckoutOK
}

// SameCart reports whether two carts are the same lines in the same order
// (a repeat, not a mismatch).
func SameCart(a, b []CartLine) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Text forms of a cart and of a reply, for stores that keep them in a
// column or a value (an idempotency table, a hold's request): fields are
// joined by the unit separator and records by the record separator, which
// the identifier rule keeps out of every id, so the form is unambiguous
// without escaping.
const (
	fieldSep  = "\x1f"
	recordSep = "\x1e"
)

// EncodeCart returns the text form of a cart: two carts have the same form
// exactly when SameCart says they are the same.
func EncodeCart(lines []CartLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Group.SKU)
		b.WriteString(fieldSep)
		b.WriteString(l.Group.Condition)
		b.WriteString(fieldSep)
		b.WriteString(l.Group.Source)
		b.WriteString(fieldSep)
		b.WriteString(strconv.FormatInt(l.N, 10))
		b.WriteString(recordSep)
	}
	return b.String()
}

// EncodeReply returns the text form of a Hold or Order reply: its code,
// deadline, and lines or short line; Detail is not kept.
func EncodeReply(r *HoldResult) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(r.Code)))
	b.WriteString(fieldSep)
	b.WriteString(strconv.FormatInt(r.ExpiresAtMS, 10))
	b.WriteString(fieldSep)
	b.WriteString(strconv.Itoa(r.Short))
	b.WriteString(fieldSep)
	b.WriteString(strconv.FormatInt(r.Available, 10))
	b.WriteString(recordSep)
	for _, l := range r.Lines {
		b.WriteString(l.Row.SKU)
		b.WriteString(fieldSep)
		b.WriteString(l.Row.Warehouse)
		b.WriteString(fieldSep)
		b.WriteString(l.Row.Condition)
		b.WriteString(fieldSep)
		b.WriteString(l.Row.Source)
		b.WriteString(fieldSep)
		b.WriteString(strconv.FormatInt(l.Count, 10))
		b.WriteString(recordSep)
	}
	return b.String()
}

// DecodeReply parses what EncodeReply wrote into r (r.Lines reused). A
// malformed text is an error naming what was wrong, and leaves r reset.
func DecodeReply(s string, r *HoldResult) error {
	r.Reset()
	head, rest, ok := strings.Cut(s, recordSep)
	if !ok {
		return fmt.Errorf("store: reply %q has no header record", s)
	}
	f := strings.Split(head, fieldSep)
	if len(f) != 4 {
		return fmt.Errorf("store: reply header has %d fields, want 4", len(f))
	}
	code, err1 := strconv.ParseUint(f[0], 10, 8)
	exp, err2 := strconv.ParseInt(f[1], 10, 64)
	short, err3 := strconv.Atoi(f[2])
	avail, err4 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("store: reply header %q: %w", head, err)
	}
	r.Code, r.ExpiresAtMS, r.Short, r.Available = CheckoutCode(code), exp, short, avail
	for rest != "" {
		var rec string
		rec, rest, ok = strings.Cut(rest, recordSep)
		if !ok {
			r.Reset()
			return fmt.Errorf("store: reply line %q is not terminated", rec)
		}
		f := strings.Split(rec, fieldSep)
		if len(f) != 5 {
			r.Reset()
			return fmt.Errorf("store: reply line %q has %d fields, want 5", rec, len(f))
		}
		n, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			r.Reset()
			return fmt.Errorf("store: reply line %q: %w", rec, err)
		}
		r.Lines = append(r.Lines, HoldLine{Row: inventory.RowKey{SKU: f[0], Warehouse: f[1], Condition: f[2], Source: f[3]}, Count: n})
	}
	return nil
}

// CheckOrder reports what is wrong with an order request (its cart, and
// its idempotency key when there is one), or "".
func CheckOrder(key string, lines []CartLine) string {
	if d := CheckCart(lines); d != "" {
		return d
	}
	if key != "" {
		if d := inventory.CheckID(key); d != "" {
			return "idempotency key " + d
		}
	}
	return ""
}

// StartSweeper runs sweep every cfg.SweepInterval, and again at once while
// a pass expires a full cfg.SweepBatch, on a goroutine of its own: the
// sweeper of a peer whose holds expire from outside the server. sweep
// returns how many holds it expired; its ctx is cancelled by stop. stop
// ends the loop, then calls release (closing the sweeper's connection),
// and returns the first error a pass had (later passes still ran).
func StartSweeper(cfg CheckoutConfig, sweep func(ctx context.Context) (int, error), release func()) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var first error
	go func() {
		defer close(done)
		t := time.NewTicker(cfg.SweepInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for {
				n, err := sweep(ctx)
				if err != nil {
					if ctx.Err() == nil && first == nil {
						first = err
					}
					break
				}
				if n < cfg.SweepBatch {
					break
				}
			}
		}
	}()
	var once sync.Once
	return func() error {
		once.Do(func() {
			cancel()
			<-done
			if release != nil {
				release()
			}
		})
		return first
	}
}
