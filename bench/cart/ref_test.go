package cart

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"allot/inventory"
	"allot/store"
)

// flaw is a deliberate defect of the reference store, to prove the checker
// catches it.
type flaw uint8

const (
	flawNone flaw = iota
	// flawNoSum checks each line alone against its group's total and then
	// takes what it can: same-group lines oversell.
	flawNoSum
	// flawNoIdempotency applies a repeat hold or order again.
	flawNoIdempotency
	// flawNoExpiry never expires a hold.
	flawNoExpiry
	// flawCancelKeepsUnits marks a hold cancelled without returning its
	// units.
	flawCancelKeepsUnits
	// flawPartialOrder applies an order's lines until the first short one
	// and keeps what it took.
	flawPartialOrder
	// flawWrongRow returns expired units to the group's first warehouse
	// instead of the rows they left.
	flawWrongRow
	// flawLateExpiry expires each hold lateExpiryMS after its deadline.
	flawLateExpiry
)

// lateExpiryMS is how late flawLateExpiry expires a hold.
const lateExpiryMS = 400

// refStore is the simplest correct store.Checkouter and store.Orderer: one
// mutex over maps, expiry by a sweeper goroutine. Its sessions are itself.
type refStore struct {
	flaw flaw
	// slowSession, when not 0, is the session (counted from 1 in the order
	// they are opened) whose HoldGet takes slowHoldGet, as a round trip to
	// a busy server would.
	slowSession int
	slowHoldGet time.Duration
	// holdPause, when not 0, is slept by every tenth Hold before it takes
	// the lock: it sets a least length to a run, whatever the machine's
	// speed (time.Sleep of less than a millisecond sleeps about one here).
	holdPause time.Duration
	holdCalls atomic.Int64
	sessions  int
	mu        sync.Mutex
	rows      map[inventory.RowKey]*inventory.Row
	// warehouses of each group, sorted.
	groups map[inventory.GroupKey][]string
	holds  map[string]*refHold
	keys   map[string]refKey
}

type refHold struct {
	lines     []store.CartLine
	reply     store.HoldResult
	state     store.HoldState
	expiresAt int64
}

type refKey struct {
	lines []store.CartLine
	reply store.HoldResult
}

func newRefStore(f flaw) *refStore { return &refStore{flaw: f} }

func (s *refStore) Load(_ context.Context, rows []inventory.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = map[inventory.RowKey]*inventory.Row{}
	s.groups = map[inventory.GroupKey][]string{}
	for _, r := range rows {
		s.rows[r.Key] = &r
		s.groups[r.Key.Group()] = append(s.groups[r.Key.Group()], r.Key.Warehouse)
	}
	for _, ws := range s.groups {
		sort.Strings(ws)
	}
	s.holds = map[string]*refHold{}
	s.keys = map[string]refKey{}
	return nil
}

func (s *refStore) PrepareCheckout(_ context.Context, cfg store.CheckoutConfig) (func() error, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(cfg.SweepInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.sweep()
			}
		}
	}()
	return func() error { close(done); wg.Wait(); return nil }, nil
}

func (s *refStore) sweep() {
	if s.flaw == flawNoExpiry {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	if s.flaw == flawLateExpiry {
		now -= lateExpiryMS
	}
	for _, h := range s.holds {
		if h.state == store.HoldHeld && h.expiresAt <= now {
			h.state = store.HoldExpired
			for _, l := range h.reply.Lines {
				k := l.Row
				if s.flaw == flawWrongRow {
					k = l.Row.Group().Row(s.groups[l.Row.Group()][0])
				}
				s.rows[k].Count += l.Count
			}
		}
	}
}

func (s *refStore) Session(context.Context) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions++
	if s.sessions == s.slowSession {
		return slowRefSession{s}, nil
	}
	return s, nil
}

// slowRefSession is a refStore session whose HoldGet is slow.
type slowRefSession struct{ *refStore }

func (s slowRefSession) HoldGet(ctx context.Context, id string, info *store.HoldInfo) (bool, error) {
	time.Sleep(s.slowHoldGet)
	return s.refStore.HoldGet(ctx, id, info)
}

func (s *refStore) Rows(context.Context) ([]inventory.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]inventory.Row, 0, len(s.rows))
	for _, r := range s.rows {
		out = append(out, *r)
	}
	return out, nil
}

func (s *refStore) Close() error { return nil }

func (s *refStore) Capture(context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
	return inventory.Result{}, errors.New("ref: capture is not part of this store")
}

func (s *refStore) Release(context.Context, inventory.RowKey, int64) (inventory.Result, error) {
	return inventory.Result{}, errors.New("ref: release is not part of this store")
}

// take allocates lines and takes their units; mu is held.
func (s *refStore) take(lines []store.CartLine, res *store.HoldResult) {
	stockOf := func(g inventory.GroupKey) []inventory.Line {
		var st []inventory.Line
		for _, w := range s.groups[g] {
			st = append(st, inventory.Line{Warehouse: w, Count: s.rows[g.Row(w)].Count})
		}
		return st
	}
	switch s.flaw {
	case flawNoSum:
		// Each line is checked and allocated against the stock as it was
		// before the request, as if alone: two lines of one group can
		// take the same units twice.
		res.Reset()
		snapshot := map[inventory.GroupKey][]inventory.Line{}
		for _, l := range lines {
			if _, ok := snapshot[l.Group]; !ok {
				snapshot[l.Group] = stockOf(l.Group)
			}
		}
		for i, l := range lines {
			if a := inventory.Allocate(snapshot[l.Group], l.N, nil); a.Code != inventory.CodeOK {
				res.Code, res.Short, res.Available = store.CheckoutInsufficient, i, a.Available
				return
			}
		}
		for _, l := range lines {
			a := inventory.Allocate(snapshot[l.Group], l.N, nil)
			for _, x := range a.Lines {
				s.rows[l.Group.Row(x.Warehouse)].Count -= x.Count
				res.Lines = append(res.Lines, store.HoldLine{Row: l.Group.Row(x.Warehouse), Count: x.Count})
			}
		}
		res.Lines = mergeByGroup(res.Lines)
		res.Code = store.CheckoutOK
		return
	case flawPartialOrder:
		// Line by line, keeping what earlier lines took when a later one
		// is short.
		res.Reset()
		for i, l := range lines {
			a := inventory.Allocate(stockOf(l.Group), l.N, nil)
			if a.Code != inventory.CodeOK {
				res.Code, res.Short, res.Available, res.Lines = store.CheckoutInsufficient, i, a.Available, res.Lines[:0]
				return
			}
			for _, x := range a.Lines {
				s.rows[l.Group.Row(x.Warehouse)].Count -= x.Count
				res.Lines = append(res.Lines, store.HoldLine{Row: l.Group.Row(x.Warehouse), Count: x.Count})
			}
		}
		res.Lines = mergeByGroup(res.Lines)
		res.Code = store.CheckoutOK
		return
	}
	d := store.SumCart(lines, nil)
	store.AllocateCart(d, func(i int) []inventory.Line { return stockOf(d[i].Group) }, res)
	if res.Code == store.CheckoutOK {
		for _, l := range res.Lines {
			s.rows[l.Row].Count -= l.Count
		}
	}
}

func clone(r store.HoldResult) store.HoldResult {
	r.Lines = slices.Clone(r.Lines)
	return r
}

func (s *refStore) Hold(_ context.Context, id string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckHold(id, ttl, lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	if s.holdPause > 0 && s.holdCalls.Add(1)%10 == 0 {
		time.Sleep(s.holdPause)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.holds[id]; ok && s.flaw != flawNoIdempotency {
		if !store.SameCart(h.lines, lines) {
			res.Reset()
			res.Code = store.CheckoutMismatch
			return nil
		}
		buf := res.Lines[:0]
		*res = h.reply
		res.Lines = append(buf, h.reply.Lines...)
		return nil
	}
	s.take(lines, res)
	if res.Code != store.CheckoutOK {
		return nil
	}
	res.ExpiresAtMS = time.Now().UnixMilli() + ttl.Milliseconds()
	s.holds[id] = &refHold{lines: slices.Clone(lines), reply: clone(*res), state: store.HoldHeld, expiresAt: res.ExpiresAtMS}
	return nil
}

func (s *refStore) Confirm(_ context.Context, id string) (store.CheckoutCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holds[id]
	if !ok {
		return store.CheckoutNotFound, nil
	}
	switch h.state {
	case store.HoldHeld:
		h.state = store.HoldConfirmed
	case store.HoldCancelled:
		return store.CheckoutCancelled, nil
	case store.HoldExpired:
		return store.CheckoutExpired, nil
	}
	return store.CheckoutOK, nil
}

func (s *refStore) Cancel(_ context.Context, id string) (store.CheckoutCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holds[id]
	if !ok {
		return store.CheckoutNotFound, nil
	}
	switch h.state {
	case store.HoldHeld:
		h.state = store.HoldCancelled
		if s.flaw != flawCancelKeepsUnits {
			for _, l := range h.reply.Lines {
				s.rows[l.Row].Count += l.Count
			}
		}
	case store.HoldConfirmed:
		return store.CheckoutConfirmed, nil
	}
	return store.CheckoutOK, nil
}

func (s *refStore) HoldGet(_ context.Context, id string, info *store.HoldInfo) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holds[id]
	if !ok {
		return false, nil
	}
	info.State, info.ExpiresAtMS = h.state, h.expiresAt
	info.Lines = append(info.Lines[:0], h.reply.Lines...)
	return true, nil
}

func (s *refStore) Order(_ context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if d := store.CheckCart(lines); d != "" {
		res.Reset()
		res.Code, res.Detail = store.CheckoutInvalid, d
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[key]; ok && key != "" && s.flaw != flawNoIdempotency {
		if !store.SameCart(k.lines, lines) {
			res.Reset()
			res.Code = store.CheckoutMismatch
			return nil
		}
		buf := res.Lines[:0]
		*res = k.reply
		res.Lines = append(buf, k.reply.Lines...)
		return nil
	}
	s.take(lines, res)
	if key != "" {
		s.keys[key] = refKey{lines: slices.Clone(lines), reply: clone(*res)}
	}
	return nil
}

func (s *refStore) ConflictRetries() int64 { return 0 }

var (
	_ store.Store            = (*refStore)(nil)
	_ store.Checkouter       = (*refStore)(nil)
	_ store.Orderer          = (*refStore)(nil)
	_ store.CheckoutPreparer = (*refStore)(nil)
)

// mergeByGroup puts lines of one group together at its first position,
// summing lines of one row, rows in warehouse order: the reply shape of a
// correct store, so that only the flaw itself shows.
func mergeByGroup(lines []store.HoldLine) []store.HoldLine {
	var out []store.HoldLine
	var order []inventory.GroupKey
	by := map[inventory.GroupKey]map[string]int64{}
	for _, l := range lines {
		g := l.Row.Group()
		if by[g] == nil {
			by[g] = map[string]int64{}
			order = append(order, g)
		}
		by[g][l.Row.Warehouse] += l.Count
	}
	for _, g := range order {
		ws := make([]string, 0, len(by[g]))
		for w := range by[g] {
			ws = append(ws, w)
		}
		sort.Strings(ws)
		for _, w := range ws {
			out = append(out, store.HoldLine{Row: g.Row(w), Count: by[g][w]})
		}
	}
	return out
}
