package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/client"
	"allot/inventory"
)

// Cross-shard holds and orders: two-phase holds.
//
// A hold or order whose lines span shards is held on each shard under
// one hold id, then confirmed on all or cancelled on all. The coordinator
// (the Router that took the request) keeps one record per hold id in a
// replicated key-value bucket (ordersBucket, a JetStream stream), and
// moves it by compare-and-set on its revision:
//
//	holding ─► held (a hold: the client decides) ─► confirming ─► confirmed
//	   │                   └──────────────► cancelling ─► cancelled
//	   └─► confirming (an order, every part held) / cancelling (one short)
//
// The decision (confirming or cancelling) is in the record before the
// first confirm or cancel is sent, and the record is created before the
// first hold. So a coordinator that dies anywhere leaves a record that
// says what is left: Recover confirms every part of a confirming one,
// cancels every part of a holding or cancelling one, and marks each done.
// A hold that nobody recovers still expires by its TTL on its shard (the
// last safety net). Two coordinators cannot both decide one record: the
// second compare-and-set fails and that one follows the first's decision.
//
// A decided record is finished by whoever meets it first, at any age (a
// repeat, Confirm, Recover): finishing twice sends the same confirms or
// cancels. An order's confirms are retried until its holds' deadline
// (not RetryFor), so a shard down for less than HoldTTL is confirmed once
// it is back.
//
// What this cannot promise: a record left confirming past its holds'
// deadline (its shard down, or its coordinator dead and nobody recovering
// it, until then) may find some parts expired after others were
// confirmed; Recover reports such a record as partial (state "partial")
// instead of hiding it.

// ordersBucket is the key-value bucket of cross-shard records.
const ordersBucket = "ALLOT_ORDERS"

// Record states.
const (
	stHolding    = "holding"
	stHeld       = "held"
	stConfirming = "confirming"
	stCancelling = "cancelling"
	stConfirmed  = "confirmed"
	stCancelled  = "cancelled"
	stPartial    = "partial"
)

// Record kinds.
const (
	kindOrder = "order"
	kindHold  = "hold"
)

// record is a cross-shard hold's or order's record.
type record struct {
	Kind string `json:"kind"`
	// Hold is the hold id on every part. An order cancelled after a
	// failure (not a short line) is tried again under a new one when its
	// key is repeated: attempt n > 0 holds under "<id>#n", id being the
	// record's (and attempt 0's).
	Hold    string       `json:"hold"`
	Attempt int          `json:"attempt,omitempty"`
	Coord   string       `json:"coord"`
	State   string       `json:"state"`
	TTL     int64        `json:"ttl_ms"`
	Begun   int64        `json:"begun_ms"`
	Lines   []recordLine `json:"lines"`
	// ExpiresAt: the earliest deadline of the parts, once held.
	ExpiresAt int64 `json:"expires_at_ms,omitempty"`
	// Why a cancelled one was cancelled: a short line (Short ≥ 0, with
	// the group's total), or a failure.
	Short     int    `json:"short"`
	Available int64  `json:"available,omitempty"`
	Failure   string `json:"failure,omitempty"`
}

type recordLine struct {
	SKU       string `json:"sku"`
	Condition string `json:"condition"`
	Source    string `json:"source"`
	N         int64  `json:"n"`
}

func recordLines(lines []inventory.Demand) []recordLine {
	out := make([]recordLine, len(lines))
	for i, l := range lines {
		out[i] = recordLine{l.Group.SKU, l.Group.Condition, l.Group.Source, l.N}
	}
	return out
}

func (rec *record) demand() []inventory.Demand {
	out := make([]inventory.Demand, len(rec.Lines))
	for i, l := range rec.Lines {
		out[i] = inventory.Demand{Group: inventory.GroupKey{SKU: l.SKU, Condition: l.Condition, Source: l.Source}, N: l.N}
	}
	return out
}

// part is one shard's lines of a cross-shard hold or order.
type part struct {
	shard string
	lines []inventory.Demand
	index []int // index[i]: lines[i]'s position in the request
}

// split groups lines by shard, in the order of each shard's first line.
func (r *Router) split(lines []inventory.Demand) []part {
	var parts []part
	at := map[string]int{}
	for i, l := range lines {
		s := r.m.Of(l.Group)
		k, ok := at[s]
		if !ok {
			k = len(parts)
			at[s] = k
			parts = append(parts, part{shard: s})
		}
		parts[k].lines = append(parts[k].lines, l)
		parts[k].index = append(parts[k].index, i)
	}
	return parts
}

// id is the record's id: the hold id of its attempt 0.
func (rec *record) id() string {
	if rec.Attempt == 0 {
		return rec.Hold
	}
	return strings.TrimSuffix(rec.Hold, "#"+strconv.Itoa(rec.Attempt))
}

// key is the record's key.
func (rec *record) key() string { return recordKey(rec.id()) }

// recordKey is the record's key: the hold id in hex (key-value keys allow
// fewer characters than hold ids).
func recordKey(hold string) string { return "h." + hex.EncodeToString([]byte(hold)) }

// orderHold is the hold id of a cross-shard order with idempotency key
// key, or, without one, a fresh id of this router's.
func (r *Router) orderHold(key string) string {
	if key == "" {
		id := "o:" + r.cfg.Coordinator
		if len(id) > 36 {
			id = id[:36]
		}
		return id + "." + strconv.FormatInt(r.start, 36) + "." + strconv.FormatUint(r.seq.Add(1), 36)
	}
	// Room is left for an attempt's "#n" (record.Attempt). A key with a
	// "#" in it is hashed: "o:x#1" is key x's attempt 1, and key "x#1"
	// must not hold (and be answered) under it.
	if len(key) <= inventory.IDBytesMax-8 && !strings.Contains(key, "#") {
		return "o:" + key
	}
	sum := sha256.Sum256([]byte(key))
	return "o#" + hex.EncodeToString(sum[:20])
}

// errCrashed: the test hook stopped a cross-shard order, as a dead
// coordinator would.
var errCrashed = errors.New("cluster: coordinator crashed (test)")

func (r *Router) crashed(step string, part int) bool {
	return r.crash != nil && r.crash(step, part)
}

// Hold holds lines under id for ttl. Lines on one shard are one HOLD
// there; lines across shards are a two-phase hold whose record Confirm
// and Cancel follow.
func (r *Router) Hold(ctx context.Context, id string, ttl time.Duration, lines []inventory.Demand) (inventory.Result, error) {
	op := inventory.Hold(id, ttl.Milliseconds(), lines)
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	parts := r.split(lines)
	if len(parts) == 1 {
		return r.call(ctx, parts[0].shard, op)
	}
	if ttl > r.cfg.Retention/2 {
		return inventory.Result{Code: inventory.CodeInvalid,
			Detail: fmt.Sprintf("a hold across shards lives at most half the records' retention (%v)", r.cfg.Retention/2)}, nil
	}
	if ttl <= r.cfg.CommitMargin {
		// Confirm refuses a hold within the margin of its deadline (a
		// part could expire between the decision and its confirm): such a
		// hold could only ever be answered EXPIRED.
		return inventory.Result{Code: inventory.CodeInvalid,
			Detail: fmt.Sprintf("a hold across shards must live longer than the commit margin (%v), or it could never be confirmed", r.cfg.CommitMargin)}, nil
	}
	return r.twoPhase(ctx, kindHold, id, ttl, lines, parts)
}

// Order captures lines all or nothing. Lines on one shard are one ORDER
// there (with key); lines across shards are held on each shard under one
// hold id (derived from key when given) for HoldTTL and then confirmed on
// all, or cancelled on all when one is short.
func (r *Router) Order(ctx context.Context, key string, lines []inventory.Demand) (inventory.Result, error) {
	op := inventory.Order(lines)
	op.IdempotencyKey = key
	if d := op.Check(); d != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	parts := r.split(lines)
	if len(parts) == 1 {
		return r.call(ctx, parts[0].shard, op)
	}
	return r.twoPhase(ctx, kindOrder, r.orderHold(key), r.cfg.HoldTTL, lines, parts)
}

// outcome is one part's reply.
type outcome struct {
	res inventory.Result
	err error
	ran bool // the request was sent (false: the test hook stopped it)
}

// fanOut runs op(part) on every part at once; step names the phase for
// the crash hook. It returns errCrashed when the hook stopped any part.
func (r *Router) fanOut(ctx context.Context, step string, parts []part, op func(p part) inventory.Op) ([]outcome, error) {
	return r.fanOutUntil(ctx, step, parts, time.Time{}, op)
}

// fanOutUntil is fanOut whose calls retry until deadline (zero: for
// RetryFor).
func (r *Router) fanOutUntil(ctx context.Context, step string, parts []part, deadline time.Time, op func(p part) inventory.Op) ([]outcome, error) {
	out := make([]outcome, len(parts))
	var wg sync.WaitGroup
	crashed := false
	var mu sync.Mutex
	for i, p := range parts {
		if r.crashed(step, i) {
			mu.Lock()
			crashed = true
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			until := deadline
			if until.IsZero() {
				until = time.Now().Add(r.cfg.RetryFor)
			}
			res, err := r.callUntil(ctx, p.shard, op(p), until)
			out[i] = outcome{res: res, err: err, ran: true}
		}()
	}
	wg.Wait()
	if crashed {
		return out, errCrashed
	}
	return out, nil
}

func (r *Router) holdOp(rec *record) func(p part) inventory.Op {
	return func(p part) inventory.Op { return inventory.Hold(rec.Hold, rec.TTL, p.lines) }
}

func (r *Router) twoPhase(ctx context.Context, kind, id string, ttl time.Duration, lines []inventory.Demand, parts []part) (inventory.Result, error) {
	rec := &record{Kind: kind, Hold: id, Coord: r.cfg.Coordinator, State: stHolding, TTL: ttl.Milliseconds(),
		Begun: time.Now().UnixMilli(), Lines: recordLines(lines), Short: -1}
	key := recordKey(id)
	b, _ := json.Marshal(rec)
	if _, busy := r.inflight.LoadOrStore(id, true); busy {
		return inventory.Result{}, fmt.Errorf("cluster: %s %s is under way on this router: %w", kind, id, client.ErrOutcomeUnknown)
	}
	defer r.inflight.Delete(id)
	rev, err := r.orders.Create(ctx, key, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return r.repeat(ctx, kind, id, ttl, lines, parts)
	}
	if err != nil {
		return inventory.Result{}, fmt.Errorf("cluster: record %s %s: %w", kind, id, client.ErrUnavailable)
	}
	return r.run(ctx, rec, key, rev, lines, parts)
}

// run takes a record just created (or moved to a new attempt) at revision
// rev through the protocol: the holds, the decision, the confirms or
// cancels.
func (r *Router) run(ctx context.Context, rec *record, key string, rev uint64, lines []inventory.Demand, parts []part) (inventory.Result, error) {
	kind, id := rec.Kind, rec.Hold
	var err error
	if r.crashed("begun", -1) {
		return inventory.Result{}, errCrashed
	}
	outs, err := r.fanOut(ctx, "hold", parts, r.holdOp(rec))
	if err != nil {
		return inventory.Result{}, err
	}
	// Decide.
	res := inventory.Result{Code: inventory.CodeOK, ShortLine: -1}
	var failure error
	for i, o := range outs {
		switch {
		case o.err != nil:
			if failure == nil {
				failure = o.err
			}
		case o.res.Code == inventory.CodeOK:
			if res.ExpiresAt == 0 || o.res.ExpiresAt < res.ExpiresAt {
				res.ExpiresAt = o.res.ExpiresAt
			}
		case o.res.Code == inventory.CodeInsufficient:
			at := parts[i].index[o.res.ShortLine]
			if res.Code != inventory.CodeInsufficient || at < res.ShortLine {
				res.Code, res.ShortLine, res.Available = inventory.CodeInsufficient, at, o.res.Available
			}
		default:
			if res.Code == inventory.CodeOK {
				res.Code, res.Detail = o.res.Code, o.res.Detail
			}
		}
	}
	if failure == nil && res.Code == inventory.CodeOK && kind == kindOrder &&
		time.Now().Add(r.cfg.CommitMargin).UnixMilli() >= res.ExpiresAt {
		failure = fmt.Errorf("the holds were taken too close to their deadline (%v margin)", r.cfg.CommitMargin)
	}
	if failure != nil || res.Code != inventory.CodeOK {
		rec.State, rec.Short, rec.Available = stCancelling, res.ShortLine, res.Available
		if failure != nil {
			rec.Failure = failure.Error()
		}
		if rev, err = r.update(ctx, key, rec, rev); err != nil {
			return inventory.Result{}, err
		}
		if r.crashed("decided", -1) {
			return inventory.Result{}, errCrashed
		}
		if err := r.finish(ctx, rec, rev); err != nil {
			return inventory.Result{}, fmt.Errorf("cluster: %s %s is being cancelled, and nothing of it will stay applied, but a shard did not answer (a repeat or Recover finishes it): %w: %w",
				kind, id, err, client.ErrOutcomeUnknown)
		}
		if failure != nil {
			return inventory.Result{}, fmt.Errorf("cluster: %s %s cancelled on every shard (nothing applied): %v: %w", kind, id, failure, client.ErrUnavailable)
		}
		return res, nil
	}
	res.Allocations = merge(lines, parts, outs)
	rec.ExpiresAt = res.ExpiresAt
	if kind == kindHold {
		rec.State = stHeld
		if _, err := r.update(ctx, key, rec, rev); err != nil {
			return inventory.Result{}, err
		}
		return res, nil
	}
	rec.State = stConfirming
	if r.cfg.Fault != FaultNoDecision {
		if rev, err = r.update(ctx, key, rec, rev); err != nil {
			return inventory.Result{}, err
		}
		if r.crashed("decided", -1) {
			return inventory.Result{}, errCrashed
		}
	}
	if err := r.finish(ctx, rec, rev); err != nil {
		if errors.Is(err, errCrashed) {
			return inventory.Result{}, err
		}
		// Not %w: the order is applied (in part, and will be whole); a
		// shard's refusal inside must not read as "not applied".
		return inventory.Result{}, fmt.Errorf("cluster: %s %s is decided and being confirmed, but a shard did not answer (a repeat or Recover finishes it): %v: %w",
			kind, id, err, client.ErrOutcomeUnknown)
	}
	res.ExpiresAt = 0
	return res, nil
}

// errRecordMoved: another coordinator (a recovery) moved the record
// first.
var errRecordMoved = errors.New("cluster: the record was moved by another coordinator")

// updateReadsMax bounds how often update reads a record whose
// compare-and-set lost to a write still in flight.
const updateReadsMax = 5

// update stores rec over revision rev.
func (r *Router) update(ctx context.Context, key string, rec *record, rev uint64) (uint64, error) {
	b, _ := json.Marshal(rec)
	nrev, err := r.orders.Update(ctx, key, b, rev)
	// A compare-and-set that lost comes back as ErrKeyExists, or, when
	// another write of the key was still being applied, as JetStream's
	// "wrong last sequence" (err_code 10164), which the client library
	// does not translate. Both mean another coordinator (a recovery)
	// wrote first: since decided records are finished by whoever meets
	// them, at any age, that is an expected race, not a failure.
	moved := errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err)
	if moved {
		// A publish that timed out and was retried may have been stored
		// the first time, or another finisher of a decided record wrote
		// the same final state: then the record holds exactly what we
		// wrote. The other write may still be in flight (10164): it is
		// read until it shows (a few times, briefly).
		for attempt := 0; attempt < updateReadsMax; attempt++ {
			e, gerr := r.orders.Get(ctx, key)
			if gerr == nil && bytes.Equal(e.Value(), b) {
				return e.Revision(), nil
			}
			if gerr == nil && e.Revision() > rev {
				break // another write landed, and it is not ours
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err != nil {
		if moved {
			return 0, fmt.Errorf("%w: %s %s (%w)", errRecordMoved, rec.Kind, rec.Hold, client.ErrOutcomeUnknown)
		}
		return 0, fmt.Errorf("cluster: record %s %s: %v: %w", rec.Kind, rec.Hold, err, client.ErrOutcomeUnknown)
	}
	return nrev, nil
}

// load reads the record of hold id; found is false when there is none.
func (r *Router) load(ctx context.Context, id string) (rec *record, rev uint64, found bool, err error) {
	e, err := r.orders.Get(ctx, recordKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("cluster: read the record of %s: %v: %w", id, err, client.ErrUnavailable)
	}
	rec = &record{}
	if err := json.Unmarshal(e.Value(), rec); err != nil {
		return nil, 0, false, fmt.Errorf("cluster: the record of %s holds %q: %w", id, e.Value(), err)
	}
	return rec, e.Revision(), true, nil
}

// finish carries out a decided record (confirming or cancelling), stored
// at revision rev, on every part and stores the final state.
func (r *Router) finish(ctx context.Context, rec *record, rev uint64) error {
	parts := r.split(rec.demand())
	key := rec.key()
	switch rec.State {
	case stConfirming:
		// An order's confirms are retried until its holds' deadline, not
		// for RetryFor only: a shard back within the holds' life (HoldTTL)
		// is confirmed there; given up after RetryFor, the record waited
		// for a repeat or a recovery that could come after the deadline
		// (EXPIRED, a partial order). A cross-shard hold's deadline is its
		// client's TTL, up to hours away: its Confirm answers an unknown
		// outcome after RetryFor, as before, and the client repeats it.
		until := time.Now().Add(r.cfg.RetryFor)
		if d := time.UnixMilli(rec.ExpiresAt); rec.Kind == kindOrder && d.After(until) {
			until = d
		}
		outs, err := r.fanOutUntil(ctx, "confirm", parts, until, func(p part) inventory.Op { return inventory.Confirm(rec.Hold) })
		if err != nil {
			return err
		}
		confirmed, lost := 0, 0
		for _, o := range outs {
			if o.err != nil {
				return fmt.Errorf("cluster: confirm %s %s: %w", rec.Kind, rec.Hold, o.err)
			}
			if o.res.Code == inventory.CodeOK {
				confirmed++
			} else {
				lost++
			}
		}
		rec.State = stConfirmed
		if lost > 0 {
			rec.State, rec.Failure = stPartial, fmt.Sprintf("%d of %d parts confirmed, the rest expired or cancelled first", confirmed, len(parts))
			if confirmed == 0 {
				rec.State = stCancelled
			}
		}
	case stCancelling:
		// A part whose hold may have been applied (its reply was lost, or
		// its coordinator died) is held again first: the repeat returns
		// the original outcome, or applies it now, so that no late hold
		// can land after the cancel.
		outs, err := r.fanOut(ctx, "cancel", parts, func(p part) inventory.Op { return inventory.Hold(rec.Hold, rec.TTL, p.lines) })
		if err != nil {
			return err
		}
		var held []part
		for i, o := range outs {
			if o.err != nil {
				return fmt.Errorf("cluster: cancel %s %s: %w", rec.Kind, rec.Hold, o.err)
			}
			if o.res.Code == inventory.CodeOK {
				held = append(held, parts[i])
			}
		}
		outs, err = r.fanOut(ctx, "cancel", held, func(p part) inventory.Op { return inventory.Cancel(rec.Hold) })
		if err != nil {
			return err
		}
		for _, o := range outs {
			if o.err != nil {
				return fmt.Errorf("cluster: cancel %s %s: %w", rec.Kind, rec.Hold, o.err)
			}
			// OK, or CONFIRMED: only a broken protocol confirms a part of
			// a record that says cancelling; the checker finds it.
		}
		rec.State = stCancelled
	default:
		return nil
	}
	_, err := r.update(ctx, key, rec, rev)
	if rec.State == stPartial {
		r.cfg.Logger.Error("cluster: a cross-shard order is partial", "hold", rec.Hold, "why", rec.Failure)
		return fmt.Errorf("cluster: %s %s: %s", rec.Kind, rec.Hold, rec.Failure)
	}
	return err
}

// merge returns the allocations of a hold or order held on parts, in
// request-line order of their groups.
func merge(lines []inventory.Demand, parts []part, outs []outcome) []inventory.Allocation {
	by := map[inventory.GroupKey][]inventory.Allocation{}
	for _, o := range outs {
		for _, a := range o.res.Allocations {
			g := a.Row.Group()
			by[g] = append(by[g], a)
		}
	}
	var out []inventory.Allocation
	seen := map[inventory.GroupKey]bool{}
	for _, l := range lines {
		if seen[l.Group] {
			continue
		}
		seen[l.Group] = true
		out = append(out, by[l.Group]...)
	}
	return out
}

// repeat answers a cross-shard hold or order whose id has a record: the
// same lines get the first outcome, other lines a MISMATCH. A decided
// record whose coordinator left it unfinished is finished first, and an
// undecided one whose coordinator is gone (this router, not running it;
// another, past RecoverAfter) is cancelled first. An order cancelled after
// a failure (nothing applied) runs again as a new attempt, so that a
// client that got "not applied" can repeat it with the same key.
func (r *Router) repeat(ctx context.Context, kind, id string, ttl time.Duration, lines []inventory.Demand, parts []part) (inventory.Result, error) {
	for range 5 {
		rec, rev, found, err := r.load(ctx, id)
		if err != nil {
			return inventory.Result{}, err
		}
		if !found {
			return inventory.Result{}, fmt.Errorf("cluster: the record of %s vanished: %w", id, client.ErrUnavailable)
		}
		if rec.Kind != kind || !slices.Equal(rec.Lines, recordLines(lines)) {
			return inventory.Result{Code: inventory.CodeMismatch, Detail: fmt.Sprintf("hold %s exists with other lines", id)}, nil
		}
		key := recordKey(id)
		switch rec.State {
		case stHolding:
			if rec.Coord != r.cfg.Coordinator && time.Since(time.UnixMilli(rec.Begun)) < r.cfg.RecoverAfter {
				return inventory.Result{}, fmt.Errorf("cluster: %s %s is under way by coordinator %s: %w", kind, id, rec.Coord, client.ErrOutcomeUnknown)
			}
			rec.State, rec.Failure = stCancelling, "its coordinator stopped before deciding"
			if rev, err = r.update(ctx, key, rec, rev); err != nil {
				continue // moved meanwhile: read it again
			}
			fallthrough
		case stConfirming, stCancelling:
			if err := r.finish(ctx, rec, rev); err != nil {
				if errors.Is(err, errRecordMoved) {
					continue
				}
				if errors.Is(err, errCrashed) {
					return inventory.Result{}, err
				}
				return inventory.Result{}, fmt.Errorf("cluster: finishing %s %s: %v: %w", kind, id, err, client.ErrOutcomeUnknown)
			}
			continue
		case stHeld, stConfirmed:
			return r.replay(ctx, rec, lines, parts)
		case stCancelled:
			if rec.Short >= 0 && rec.Failure == "" {
				return inventory.Result{Code: inventory.CodeInsufficient, ShortLine: rec.Short, Available: rec.Available}, nil
			}
			if kind == kindHold && rec.ExpiresAt != 0 {
				// It was held on every part (ExpiresAt is recorded only
				// then) and cancelled or found expired since: a repeat
				// gets the original reply, as on one shard.
				return r.replay(ctx, rec, lines, parts)
			}
			if kind != kindOrder {
				return inventory.Result{}, fmt.Errorf("cluster: hold %s was cancelled on every shard (%s); hold again under another id: %w", id, rec.Failure, client.ErrUnavailable)
			}
			// A new attempt under a new hold id: the last one's are
			// cancelled on every shard and stay so.
			rec.Attempt++
			rec.Hold = id + "#" + strconv.Itoa(rec.Attempt)
			rec.State, rec.Coord, rec.Begun, rec.TTL = stHolding, r.cfg.Coordinator, time.Now().UnixMilli(), ttl.Milliseconds()
			rec.Failure, rec.Short, rec.Available, rec.ExpiresAt = "", -1, 0, 0
			if rev, err = r.update(ctx, key, rec, rev); err != nil {
				continue
			}
			return r.run(ctx, rec, key, rev, lines, parts)
		default: // partial
			return inventory.Result{}, fmt.Errorf("cluster: %s %s: %s", kind, id, rec.Failure)
		}
	}
	return inventory.Result{}, fmt.Errorf("cluster: %s %s keeps moving under other coordinators: %w", kind, id, client.ErrOutcomeUnknown)
}

// replay answers a repeat of a record whose parts were all held: each
// shard returns its part's original reply to the same HOLD (in every
// state of the hold), which applies nothing.
func (r *Router) replay(ctx context.Context, rec *record, lines []inventory.Demand, parts []part) (inventory.Result, error) {
	outs, err := r.fanOut(ctx, "repeat", parts, r.holdOp(rec))
	if err != nil {
		return inventory.Result{}, err
	}
	for _, o := range outs {
		if o.err != nil {
			return inventory.Result{}, o.err
		}
	}
	res := inventory.Result{Code: inventory.CodeOK, Allocations: merge(lines, parts, outs)}
	if rec.Kind == kindHold {
		res.ExpiresAt = rec.ExpiresAt
	}
	return res, nil
}

// Confirm confirms hold id: on its one shard, or, for a cross-shard hold,
// on every part after recording the decision.
func (r *Router) Confirm(ctx context.Context, id string) (inventory.Result, error) {
	return r.decide(ctx, id, true)
}

// Cancel cancels hold id (as Confirm).
func (r *Router) Cancel(ctx context.Context, id string) (inventory.Result, error) {
	return r.decide(ctx, id, false)
}

func (r *Router) decide(ctx context.Context, id string, confirm bool) (inventory.Result, error) {
	op := inventory.Cancel(id)
	if confirm {
		op = inventory.Confirm(id)
	}
	rec, rev, res, err := r.lookup(ctx, op)
	if rec == nil {
		return res, err
	}
	key := recordKey(id)
	// Once the decision is in the record, a part may be confirmed or
	// cancelled whatever a shard answers next: a failure from here on is
	// an unknown outcome (not %w: a shard's refusal inside must not read
	// as "not applied"), and a repeat finishes the record and answers.
	unfinished := func(err error) (inventory.Result, error) {
		return inventory.Result{}, fmt.Errorf("cluster: %s %s is decided (%s) but not finished on every shard (a repeat or Recover finishes it): %v: %w",
			rec.Kind, id, rec.State, err, client.ErrOutcomeUnknown)
	}
	for range 5 {
		switch rec.State {
		case stHeld:
			answer := inventory.Result{Code: inventory.CodeOK}
			rec.State = stCancelling
			switch {
			case confirm && time.Now().Add(r.cfg.CommitMargin).UnixMilli() >= rec.ExpiresAt:
				rec.Failure, answer.Code = "expired", inventory.CodeExpired
			case confirm:
				rec.State = stConfirming
			}
			if rev, err = r.update(ctx, key, rec, rev); err != nil {
				if errors.Is(err, errRecordMoved) {
					break // another call decided first: read its decision
				}
				return inventory.Result{}, err
			}
			if err := r.finish(ctx, rec, rev); err != nil {
				return unfinished(err)
			}
			return answer, nil
		case stConfirming, stCancelling:
			// Decided by an earlier call whose confirms or cancels did
			// not all land (or whose coordinator died): finishing it is
			// safe from anywhere, they repeat without effect.
			if err := r.finish(ctx, rec, rev); err != nil && !errors.Is(err, errRecordMoved) {
				return unfinished(err)
			}
		case stConfirmed:
			if confirm {
				return inventory.Result{Code: inventory.CodeOK}, nil
			}
			return inventory.Result{Code: inventory.CodeConfirmed}, nil
		case stCancelled:
			if !confirm {
				return inventory.Result{Code: inventory.CodeOK}, nil
			}
			if rec.Failure == "expired" {
				return inventory.Result{Code: inventory.CodeExpired}, nil
			}
			return inventory.Result{Code: inventory.CodeCancelled}, nil
		default:
			return inventory.Result{}, fmt.Errorf("cluster: %s %s is %s by coordinator %s: %w", rec.Kind, id, rec.State, rec.Coord, client.ErrOutcomeUnknown)
		}
		var found bool
		if rec, rev, found, err = r.load(ctx, id); err != nil {
			return inventory.Result{}, err
		}
		if !found {
			return inventory.Result{}, fmt.Errorf("cluster: the record of %s vanished: %w", id, client.ErrUnavailable)
		}
	}
	return inventory.Result{}, fmt.Errorf("cluster: %s %s keeps moving under other coordinators: %w", rec.Kind, id, client.ErrOutcomeUnknown)
}

// lookup checks op (a confirm, cancel or hold-get) and reads its hold's
// record. Without one (a bad op, or a hold on one shard) it returns a nil
// record and the answer: the op's invalid reply, or broadcast's.
func (r *Router) lookup(ctx context.Context, op inventory.Op) (*record, uint64, inventory.Result, error) {
	if d := op.Check(); d != "" {
		return nil, 0, inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
	}
	rec, rev, found, err := r.load(ctx, op.Hold)
	if err != nil || found {
		return rec, rev, inventory.Result{}, err
	}
	res, err := r.broadcast(ctx, op)
	return nil, 0, res, err
}

// broadcast sends a confirm, cancel or hold-get of a hold without a
// record (a hold on one shard) to every shard: the one that knows the
// hold answers, the others say NOTFOUND.
func (r *Router) broadcast(ctx context.Context, op inventory.Op) (inventory.Result, error) {
	parts := make([]part, len(r.m.Shards))
	for i, s := range r.m.Shards {
		parts[i] = part{shard: s}
	}
	outs, err := r.fanOut(ctx, "broadcast", parts, func(part) inventory.Op { return op })
	if err != nil {
		return inventory.Result{}, err
	}
	// The shard that knows the hold answers for it, whatever the others
	// did: one that does not hold it being down must not fail (or call
	// "not applied") a confirm that its shard applied. Without such an
	// answer, an unreachable shard may be the one: its error stands, an
	// unknown outcome before a refusal.
	res := inventory.Result{Code: inventory.CodeNotFound}
	var failure error
	for _, o := range outs {
		switch {
		case o.err != nil:
			if failure == nil || (errors.Is(o.err, client.ErrOutcomeUnknown) && !errors.Is(failure, client.ErrOutcomeUnknown)) {
				failure = o.err
			}
		case o.res.Code != inventory.CodeNotFound:
			return o.res, nil
		}
	}
	if failure != nil {
		return inventory.Result{}, failure
	}
	return res, nil
}

// HoldGet reads hold id; a cross-shard hold's allocations are merged from
// its parts, its state is its record's once decided.
func (r *Router) HoldGet(ctx context.Context, id string) (inventory.Result, error) {
	op := inventory.HoldGet(id)
	rec, _, res, err := r.lookup(ctx, op)
	if rec == nil {
		return res, err
	}
	lines := rec.demand()
	parts := r.split(lines)
	outs, err := r.fanOut(ctx, "get", parts, func(part) inventory.Op { return op })
	if err != nil {
		return inventory.Result{}, err
	}
	res = inventory.Result{Code: inventory.CodeOK}
	for i, o := range outs {
		if o.err != nil {
			return inventory.Result{}, o.err
		}
		if o.res.Code != inventory.CodeOK {
			return o.res, nil
		}
		if res.ExpiresAt == 0 || o.res.ExpiresAt < res.ExpiresAt {
			res.ExpiresAt = o.res.ExpiresAt
		}
		// Undecided parts may differ (one expired, one held): a part that
		// is no longer held names the state.
		if i == 0 || o.res.State != inventory.HoldHeld {
			res.State = o.res.State
		}
	}
	switch rec.State {
	case stConfirmed:
		res.State = inventory.HoldConfirmed
	case stCancelled:
		res.State = inventory.HoldCancelled
		if rec.Failure == "expired" {
			res.State = inventory.HoldExpired
		}
	}
	res.Allocations = merge(lines, parts, outs)
	return res, nil
}

// RecoverStats counts what Recover did.
type RecoverStats struct {
	Confirmed, Cancelled, Partial, Skipped int
}

// Recover finishes the cross-shard holds and orders whose coordinator
// left them undecided or half done: decided ones (confirming, cancelling)
// at once, whoever decided them; undecided ones (holding) at once when
// they are this router's (it was restarted under the same name), others'
// once older than RecoverAfter. Holding ones are cancelled, confirming
// ones confirmed, cancelling ones cancelled; held ones are the client's
// to decide and stay.
func (r *Router) Recover(ctx context.Context) (RecoverStats, error) {
	var st RecoverStats
	lister, err := r.orders.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("cluster: list the records: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	var errs []error
	for _, k := range keys {
		e, err := r.orders.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rec := &record{}
		if err := json.Unmarshal(e.Value(), rec); err != nil {
			errs = append(errs, fmt.Errorf("cluster: record %s holds %q: %w", k, e.Value(), err))
			continue
		}
		switch rec.State {
		case stHolding, stConfirming, stCancelling:
		default:
			continue
		}
		// Only an undecided record may still be its coordinator's to
		// decide. A decided one is finished at any age: a second finisher
		// sends the same confirms or cancels and writes the same final
		// state, and one left until RecoverAfter (as long as the holds'
		// TTL, by default) met parts at their deadline: confirmed on one
		// shard, EXPIRED on another.
		if rec.State == stHolding && rec.Coord != r.cfg.Coordinator && time.Since(time.UnixMilli(rec.Begun)) < r.cfg.RecoverAfter {
			st.Skipped++
			continue
		}
		if _, busy := r.inflight.Load(rec.id()); busy {
			st.Skipped++ // this router is running it
			continue
		}
		rev := e.Revision()
		if rec.State == stHolding {
			rec.State, rec.Failure = stCancelling, "its coordinator stopped before deciding"
			if rev, err = r.update(ctx, k, rec, rev); err != nil {
				if errors.Is(err, errRecordMoved) {
					st.Skipped++
					continue
				}
				errs = append(errs, err)
				continue
			}
		}
		r.cfg.Logger.Info("cluster: recovering", "kind", rec.Kind, "hold", rec.Hold, "state", rec.State, "coordinator", rec.Coord)
		if err := r.finish(ctx, rec, rev); err != nil {
			if errors.Is(err, errRecordMoved) {
				st.Skipped++ // its coordinator (or another recovery) finished it first
				continue
			}
			errs = append(errs, err)
		}
		switch rec.State {
		case stConfirmed:
			st.Confirmed++
		case stCancelled:
			st.Cancelled++
		case stPartial:
			st.Partial++
		}
	}
	return st, errors.Join(errs...)
}
