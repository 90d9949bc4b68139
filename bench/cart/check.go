package cart

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"allot/bench"
	"allot/inventory"
	"allot/store"
)

// violations collects what the checker found.
type violations struct {
	mu  sync.Mutex
	res bench.CheckResult
}

func (v *violations) addf(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.res.ViolationCount++
	if len(v.res.Violations) < bench.ViolationsListMax {
		v.res.Violations = append(v.res.Violations, fmt.Sprintf(format, args...))
	}
}

// checked is what the check found besides violations, for Result.Extra.
type checked struct {
	v            violations
	duplicates   int64
	unitsMissing int64
	unitsExtra   int64
	confirmed    int64
	cancelled    int64
	expired      int64
	insufficient int64
	unknown      int64
	resends      int64
}

// checkLines checks that an applied cart's lines cover each requested
// group exactly, in request-line order, each group's rows in ascending
// warehouse order, counts above zero.
func checkLines(lines []store.CartLine, got []store.HoldLine) string {
	demand := store.SumCart(lines, nil)
	k := 0
	for _, d := range demand {
		sum, prev := int64(0), ""
		for ; k < len(got) && got[k].Row.Group() == d.Group; k++ {
			if got[k].Count <= 0 {
				return fmt.Sprintf("line for %v holds %d units", got[k].Row, got[k].Count)
			}
			if prev != "" && got[k].Row.Warehouse <= prev {
				return fmt.Sprintf("group %v: warehouse %q after %q, not in ascending order", d.Group, got[k].Row.Warehouse, prev)
			}
			prev = got[k].Row.Warehouse
			sum += got[k].Count
		}
		if sum != d.N {
			return fmt.Sprintf("group %v: lines hold %d units, the cart asked for %d (same-group lines summed): not all or nothing", d.Group, sum, d.N)
		}
	}
	if k != len(got) {
		return fmt.Sprintf("line %d (%v) is not where the cart's groups put it", k+1, got[k].Row)
	}
	return ""
}

// check resolves every hold's end state, reads the rows back and compares.
func (r *run) check(ctx context.Context, st store.Store) *checked {
	c := &checked{}
	initial := make(map[inventory.RowKey]int64, len(r.w.Rows))
	expected := make(map[inventory.RowKey]int64, len(r.w.Rows))
	for _, row := range r.w.Rows {
		initial[row.Key] = row.Count
		expected[row.Key] = row.Count
	}
	// Groups whose total is known only within a range, because an order's
	// outcome stayed unknown: the most units that may be missing.
	loose := map[inventory.GroupKey]int64{}
	taken := func(lines []store.HoldLine) {
		for _, l := range lines {
			expected[l.Row] -= l.Count
		}
	}
	if r.mode == ModeCheckout {
		r.settleHolds(ctx, c)
	}
	loaded := map[inventory.GroupKey]int64{}
	for _, row := range r.w.Rows {
		loaded[row.Key.Group()] += row.Count
	}
	floor := r.groupFloors(loaded)
	r.comparedSomething(c, loaded)
	// refused lists the carts refused though they had the stock.
	var refused []int
	for i := range r.outs {
		out, cart := &r.outs[i], &r.w.Carts[i]
		if !out.done {
			continue
		}
		if out.resend {
			c.resends++
			if out.resendDiff != "" {
				c.duplicates++
				c.v.addf("%s %s: a repeat with the same key was answered differently: %s", r.mode, r.ID(i), out.resendDiff)
			}
		}
		if out.unknown {
			c.unknown++
			if r.mode == ModeOrder {
				for _, d := range store.SumCart(cart.Lines, nil) {
					loose[d.Group] += d.N
				}
			}
			continue
		}
		switch out.code {
		case store.CheckoutOK:
			if r.opt.EmptyBranches {
				if len(out.lines) != 0 {
					c.v.addf("order %s: empty branches took %v", r.ID(i), out.lines)
				}
				continue
			}
			if d := checkLines(cart.Lines, out.lines); d != "" {
				c.v.addf("%s %s: %s", r.mode, r.ID(i), d)
			}
			if r.mode == ModeOrder {
				taken(out.lines)
			} else if out.finalState == store.HoldConfirmed {
				taken(out.lines)
			}
		case store.CheckoutInsufficient:
			c.insufficient++
			if out.short < 0 || out.short >= len(cart.Lines) {
				c.v.addf("%s %s: insufficient names line %d of a %d-line cart", r.mode, r.ID(i), out.short+1, len(cart.Lines))
				continue
			}
			// The available a refusal names is the group's total when the
			// store decided: at least the demand means it had the stock.
			// Concurrency cannot excuse it. A store that reports 0 (or
			// less than it had) is held to the group's floor instead: at
			// every moment of the run the group held at least its
			// initial total minus the demand of every cart acknowledged
			// or of unknown outcome on it, so a demand within the floor
			// was there whenever the store decided.
			g := cart.Lines[out.short].Group
			for _, d := range store.SumCart(cart.Lines, nil) {
				if d.Group == g && (out.available >= d.N || floor[g] >= d.N) {
					refused = append(refused, i)
				}
			}
		default:
			c.v.addf("%s %s: unexpected reply %s", r.mode, r.ID(i), out.code)
		}
	}
	if r.mode == ModeCheckout {
		for i := range r.outs {
			switch r.outs[i].finalState {
			case store.HoldConfirmed:
				c.confirmed++
			case store.HoldCancelled:
				c.cancelled++
			case store.HoldExpired:
				c.expired++
			}
		}
	}
	// The sessions go back before the rows are read: a store whose pool is
	// sized to the sessions (Workers+1) would have no connection left.
	r.closeSessions()
	final, err := st.Rows(ctx)
	if err != nil {
		c.v.addf("reading the rows back: %v", err)
		r.addRefusals(c, refused, floor, loaded)
		return c
	}
	got := make(map[inventory.RowKey]int64, len(final))
	for _, row := range final {
		got[row.Key] = row.Count
		if row.Count < 0 {
			c.v.addf("row %v is below zero: %d", row.Key, row.Count)
		}
		if _, ok := initial[row.Key]; !ok {
			c.v.addf("row %v was never loaded", row.Key)
		}
	}
	keys := make([]inventory.RowKey, 0, len(expected))
	for k := range expected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return inventory.CompareRowKeys(keys[a], keys[b]) < 0 })
	groupWant := map[inventory.GroupKey]int64{}
	groupGot := map[inventory.GroupKey]int64{}
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			c.v.addf("row %v is missing", k)
			continue
		}
		groupWant[k.Group()] += expected[k]
		groupGot[k.Group()] += g
		if _, isLoose := loose[k.Group()]; isLoose {
			continue
		}
		switch want := expected[k]; {
		case g < want:
			c.unitsMissing += want - g
			c.v.addf("row %v holds %d, want %d = initial %d - confirmed and ordered units: %d units taken and not accounted for (applied twice, or a hold's units not returned)", k, g, want, initial[k], want-g)
		case g > want:
			c.unitsExtra += g - want
			c.v.addf("row %v holds %d, want %d = initial %d - confirmed and ordered units: %d units more (sold units came back, or went to the wrong row)", k, g, want, initial[k], g-want)
		}
	}
	for g, slack := range loose {
		if got, want := groupGot[g], groupWant[g]; got > want || got < want-slack {
			c.v.addf("group %v holds %d, want from %d to %d (orders of unknown outcome)", g, got, want-slack, want)
		}
	}
	r.addRefusals(c, refused, floor, loaded)
	return c
}

// addRefusals adds a violation for each cart in refused, refused though
// the available it named, or its group's floor, covered its demand. They
// come after the rows' findings: a store that lost units goes on to
// refuse what the floor says it had, and the lost units are the first
// thing to read.
func (r *run) addRefusals(c *checked, refused []int, floor, loaded map[inventory.GroupKey]int64) {
	for _, i := range refused {
		cart, out := &r.w.Carts[i], &r.outs[i]
		g := cart.Lines[out.short].Group
		var n int64
		for _, d := range store.SumCart(cart.Lines, nil) {
			if d.Group == g {
				n = d.N
			}
		}
		if out.available >= n {
			c.v.addf("%s %s: refused with %d available in group %v for a demand of %d: it had the stock", r.mode, r.ID(i), out.available, g, n)
		} else {
			c.v.addf("%s %s: refused a demand of %d in group %v (reporting %d available), which held at least %d throughout the run (its initial %d minus every cart acknowledged or of unknown outcome on it): it had the stock", r.mode, r.ID(i), n, g, out.available, floor[g], loaded[g])
		}
	}
}

// groupFloors returns, per group, the least it can have held at any
// moment of the run: its total when loaded minus the demand of every cart
// that may have taken from it (acknowledged OK, or of unknown outcome). A
// cancelled or expired hold gives units back, so this is lower than the
// truth, never higher: a refusal of a demand within it is wrong whatever
// the order of the calls.
func (r *run) groupFloors(loaded map[inventory.GroupKey]int64) map[inventory.GroupKey]int64 {
	floor := maps.Clone(loaded)
	for i := range r.outs {
		out := &r.outs[i]
		if !out.done || (!out.unknown && out.code != store.CheckoutOK) {
			continue
		}
		for _, d := range store.SumCart(r.w.Carts[i].Lines, nil) {
			floor[d.Group] -= d.N
		}
	}
	return floor
}

// comparedSomething adds a violation when no cart succeeded while the
// stock loaded covered some. Refusals against a floor catch a store that
// refuses what it has, but under contention floors go negative, and a
// store that refuses everything (or errs on everything) would leave the
// rows as loaded and pass: the check would have compared nothing, as the
// search checker says of empty against empty.
func (r *run) comparedSomething(c *checked, loaded map[inventory.GroupKey]int64) {
	var run, covered int64
	for i := range r.outs {
		out := &r.outs[i]
		if !out.done {
			continue
		}
		if !out.unknown && out.code == store.CheckoutOK {
			return
		}
		run++
		if covers(loaded, &r.w.Carts[i]) {
			covered++
		}
	}
	if covered > 0 {
		c.v.addf("the check compared nothing: none of the %d %ss run succeeded, though the stock loaded covered %d of them (each of their groups held their demand)", run, r.mode, covered)
	}
}

// covers reports whether totals hold cart's demand in each of its groups.
func covers(totals map[inventory.GroupKey]int64, cart *Cart) bool {
	for _, d := range store.SumCart(cart.Lines, nil) {
		if totals[d.Group] < d.N {
			return false
		}
	}
	return true
}

// settleHolds finds every hold's end state: it waits for abandoned (and
// unknown) holds to expire, up to ExpiryWait past their deadline, and
// compares each state with what its cart did.
func (r *run) settleHolds(ctx context.Context, c *checked) {
	var wg sync.WaitGroup
	next := make(chan int)
	for k := range r.cfg.Workers {
		co := r.sessions[k].(store.Checkouter)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var info store.HoldInfo
			for i := range next {
				r.settle(ctx, co, i, &info, c)
			}
		}()
	}
	for i := range r.outs {
		if o := &r.outs[i]; o.done && (o.unknown || o.code == store.CheckoutOK) {
			next <- i
		}
	}
	close(next)
	wg.Wait()
}

func (r *run) settle(ctx context.Context, co store.Checkouter, i int, info *store.HoldInfo, c *checked) {
	out, cart, id := &r.outs[i], &r.w.Carts[i], r.ID(i)
	var found bool
	var err error
	for try := 0; ; try++ {
		found, err = co.HoldGet(ctx, id, info)
		if err != nil {
			if try < r.opt.CallRetries && ctx.Err() == nil {
				continue
			}
			c.v.addf("hold %s: reading it back: %v", id, err)
			return
		}
		if !found || info.State != store.HoldHeld {
			break
		}
		deadline := out.expiresAt
		if out.unknown {
			// Its deadline was never seen: allow the whole ttl since
			// the end of the run.
			deadline = r.start.Add(r.elapsed + r.opt.TTL).UnixMilli()
		}
		if nowMS() > float64(deadline)+float64(r.opt.ExpiryWait/time.Millisecond) || ctx.Err() != nil {
			c.v.addf("hold %s (%s) is still held %.0f ms after its deadline: stuck", id, cart.Fate, nowMS()-float64(deadline))
			return
		}
		time.Sleep(r.opt.Poll)
	}
	if out.unknown {
		if found && info.State != store.HoldExpired {
			c.v.addf("hold %s was never acknowledged and never confirmed, yet ended %s", id, info.State)
		}
		return
	}
	if !found {
		c.v.addf("hold %s (%s) is unknown to the store after the run", id, cart.Fate)
		return
	}
	out.finalState = info.State
	if !slices.Equal(info.Lines, out.lines) {
		c.v.addf("hold %s: read back with lines %v, held %v", id, info.Lines, out.lines)
	}
	want := map[Fate][]store.HoldState{FateAbandon: {store.HoldExpired}}
	switch {
	case out.finishUnknown:
		want[FateConfirm] = []store.HoldState{store.HoldConfirmed, store.HoldExpired}
		want[FateCancel] = []store.HoldState{store.HoldCancelled, store.HoldExpired}
	case out.finish == store.CheckoutOK:
		want[FateConfirm] = []store.HoldState{store.HoldConfirmed}
		// Cancelling an expired hold is OK too.
		want[FateCancel] = []store.HoldState{store.HoldCancelled, store.HoldExpired}
	case out.finish == store.CheckoutExpired && cart.Fate == FateConfirm:
		want[FateConfirm] = []store.HoldState{store.HoldExpired}
	default:
		c.v.addf("hold %s: %s answered %s", id, cart.Fate, out.finish)
		return
	}
	if !slices.Contains(want[cart.Fate], info.State) {
		c.v.addf("hold %s (%s, answered %s) ended %s", id, cart.Fate, out.finish, info.State)
	}
}
