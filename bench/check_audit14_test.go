package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
)

// misallocating is an in-process store whose captures are atomic, never
// oversell, and reply with exactly the lines they took, in ascending
// warehouse order, but choose those lines by a rule of their own
// (allocate): every total and every row's accounting stays right, only
// the allocation rule is broken. With inventory.Allocate as its rule it is
// a sound store.
type misallocating struct {
	allocate func(stock []inventory.Line, n int64) []inventory.Line

	mu     sync.Mutex
	counts map[inventory.RowKey]int64
	prices map[inventory.RowKey]int64
	groups map[inventory.GroupKey][]string // warehouses, ascending
}

func newMisallocating(allocate func(stock []inventory.Line, n int64) []inventory.Line) *misallocating {
	return &misallocating{allocate: allocate}
}

func (m *misallocating) Load(_ context.Context, rows []inventory.Row) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts = make(map[inventory.RowKey]int64, len(rows))
	m.prices = make(map[inventory.RowKey]int64, len(rows))
	m.groups = make(map[inventory.GroupKey][]string)
	for _, r := range rows {
		m.counts[r.Key], m.prices[r.Key] = r.Count, r.Price
		m.groups[r.Key.Group()] = append(m.groups[r.Key.Group()], r.Key.Warehouse)
	}
	for _, ws := range m.groups {
		slices.Sort(ws)
	}
	return nil
}

func (m *misallocating) Rows(context.Context) ([]inventory.Row, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []inventory.Row
	for k, c := range m.counts {
		out = append(out, inventory.Row{Key: k, Count: c, Price: m.prices[k]})
	}
	return out, nil
}

func (m *misallocating) Session(context.Context) (store.Session, error) { return m, nil }
func (m *misallocating) Close() error                                   { return nil }

func (m *misallocating) Capture(_ context.Context, g inventory.GroupKey, n int64, _ []inventory.Line) (inventory.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var stock []inventory.Line
	var total int64
	for _, w := range m.groups[g] {
		c := m.counts[g.Row(w)]
		stock = append(stock, inventory.Line{Warehouse: w, Count: c})
		total += c
	}
	if total < n {
		return inventory.Result{Code: inventory.CodeInsufficient, Available: total}, nil
	}
	lines := m.allocate(stock, n)
	slices.SortFunc(lines, func(a, b inventory.Line) int { return strings.Compare(a.Warehouse, b.Warehouse) })
	for _, l := range lines {
		m.counts[g.Row(l.Warehouse)] -= l.Count
	}
	return inventory.Result{Code: inventory.CodeOK, Lines: lines}, nil
}

func (m *misallocating) Release(_ context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.counts[k]
	if !ok {
		return inventory.Result{Code: inventory.CodeNotFound}, nil
	}
	m.counts[k] = c + n
	return inventory.Result{Code: inventory.CodeOK, Count: c + n}, nil
}

// ruleAscending is the domain's rule.
func ruleAscending(stock []inventory.Line, n int64) []inventory.Line {
	return slices.Clone(inventory.Allocate(stock, n, nil).Lines)
}

// ruleDescending takes from the last warehouse first.
func ruleDescending(stock []inventory.Line, n int64) []inventory.Line {
	reversed := slices.Clone(stock)
	slices.Reverse(reversed)
	return ruleAscending(reversed, n)
}

// ruleLeaveOne walks the warehouses in order but leaves a unit in each row
// while a later one can give it, so it touches the next row before the
// last is empty.
func ruleLeaveOne(stock []inventory.Line, n int64) []inventory.Line {
	took := make([]int64, len(stock))
	for pass := int64(1); pass >= 0 && n > 0; pass-- {
		for i, s := range stock {
			k := min(max(s.Count-took[i]-pass, 0), n)
			took[i] += k
			n -= k
		}
	}
	var out []inventory.Line
	for i, k := range took {
		if k > 0 {
			out = append(out, inventory.Line{Warehouse: stock[i].Warehouse, Count: k})
		}
	}
	return out
}

// ruleWrongOnce is the domain's rule but for one capture, the first whose
// units ruleDescending would take from other rows.
func ruleWrongOnce() func([]inventory.Line, int64) []inventory.Line {
	done := false
	return func(stock []inventory.Line, n int64) []inventory.Line {
		want := ruleAscending(stock, n)
		if wrong := ruleDescending(stock, n); !done && !slices.Equal(wrong, want) {
			done = true
			return wrong
		}
		return want
	}
}

// A store that takes a capture's units from the wrong rows of the group,
// and says which rows it took them from, keeps every total and every row's
// accounting right: only the allocation rule finds it. With one worker
// the ops were applied in op order and every capture is replayed: even a
// single wrong one, which later captures may have covered up, is found.
// With four, the order is known only in part, and the check must still
// pass the sound store and find one that takes from the last warehouse
// first, from what the rows hold at the end. A store that leaves one
// unit behind in a row is off by too little for the slack concurrency
// leaves (up to three releases of up to three units a row), and is held
// to the rule only with one worker.
func TestAudit14CheckCatchesTheWrongAllocation(t *testing.T) {
	w := genWorkload(t, "hot", 5000)
	for _, tc := range []struct {
		name    string
		rule    func() func([]inventory.Line, int64) []inventory.Line
		workers int
		want    string // "": the store is sound
	}{
		{"sound", func() func([]inventory.Line, int64) []inventory.Line { return ruleAscending }, 1, ""},
		{"sound", func() func([]inventory.Line, int64) []inventory.Line { return ruleAscending }, 4, ""},
		{"last warehouse first", func() func([]inventory.Line, int64) []inventory.Line { return ruleDescending }, 1, "took from the wrong rows"},
		{"last warehouse first", func() func([]inventory.Line, int64) []inventory.Line { return ruleDescending }, 4, "which by the allocation rule leaves it empty"},
		{"next row before the last is empty", func() func([]inventory.Line, int64) []inventory.Line { return ruleLeaveOne }, 1, "took from the wrong rows"},
		{"one capture wrong", ruleWrongOnce, 1, "the allocation rule on the group as the ops before it left it gives"},
	} {
		t.Run(fmt.Sprintf("%s/%d workers", tc.name, tc.workers), func(t *testing.T) {
			cfg := RunConfig{Workers: tc.workers, RetryDelay: time.Microsecond, RetryMax: 100}
			res := runOn(t, cfg, newMisallocating(tc.rule()), w)
			if res.Errors != 0 {
				t.Fatalf("%d errors: %q", res.Errors, res.ErrorSamples)
			}
			if tc.want == "" {
				if !res.Check.OK {
					t.Fatalf("the sound store fails the check: %+v", res.Check)
				}
				return
			}
			if res.Check.OK || res.Status != StatusCheckFailed {
				t.Fatalf("check passed: %+v", res.Check)
			}
			if v := strings.Join(res.Check.Violations, "\n"); !strings.Contains(v, tc.want) {
				t.Fatalf("no violation mentions %q:\n%s", tc.want, v)
			}
		})
	}
}

// errUnknown is a session error: the op may or may not have applied.
var errUnknown = errors.New("connection reset")

// An op of unknown outcome leaves its group's total in a range and its rows
// to what it can have moved. A capture applied in part, or a failed
// release that landed on another row, is no outcome of a sound store
// (each op applies whole or not at all, to its own rows); the check must
// find both, and pass a store whose failed ops applied whole or not at all.
func TestAudit14CheckNarrowsUnknownOutcomes(t *testing.T) {
	w := genWorkload(t, "hot", 5000)
	// counter returns a function that counts the calls made to it.
	counter := func() func() int {
		var mu sync.Mutex
		n := 0
		return func() int {
			mu.Lock()
			defer mu.Unlock()
			n++
			return n
		}
	}

	t.Run("sound", func(t *testing.T) {
		// Failed calls applied whole, or not at all, in every group, with
		// four workers contending.
		next := counter()
		st := &faulty{
			Store: memory.New(),
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				switch next() % 13 {
				case 0:
					return inventory.Result{}, errUnknown
				case 7:
					if res, err := se.Capture(ctx, g, n, lines); err != nil || res.Code != inventory.CodeOK {
						return res, err
					}
					return inventory.Result{}, errUnknown
				}
				return se.Capture(ctx, g, n, lines)
			},
			release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
				switch next() % 11 {
				case 0:
					return inventory.Result{}, errUnknown
				case 5:
					se.Release(ctx, k, n)
					return inventory.Result{}, errUnknown
				}
				return se.Release(ctx, k, n)
			},
		}
		for _, workers := range []int{1, 4} {
			res := runOn(t, RunConfig{Workers: workers, RetryDelay: time.Microsecond, RetryMax: 100}, st, w)
			if res.Errors == 0 || !res.Check.OK {
				t.Fatalf("%d workers, failed ops applied whole or not at all: %d errors, check %+v", workers, res.Errors, res.Check)
			}
		}
	})

	cfg := RunConfig{Workers: 1, RetryDelay: time.Microsecond, RetryMax: 2}
	t.Run("capture applied in part", func(t *testing.T) {
		// A capture of 2 or more, the 10th such, takes all but one unit
		// and fails: the group's total is in the range the unknown
		// capture allows, and is no outcome of it.
		next := counter()
		st := &faulty{
			Store: memory.New(),
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				if n >= 2 && next() == 10 {
					se.Capture(ctx, g, n-1, lines)
					return inventory.Result{}, errUnknown
				}
				return se.Capture(ctx, g, n, lines)
			},
		}
		res := runOn(t, cfg, st, w)
		if res.Errors != 1 || res.Check.OK {
			t.Fatalf("%d errors, check %+v", res.Errors, res.Check)
		}
		if v := strings.Join(res.Check.Violations, "\n"); !strings.Contains(v, "an op applied in part") {
			t.Fatalf("no violation names the part-applied capture:\n%s", v)
		}
	})

	t.Run("failed release on another row", func(t *testing.T) {
		// The 10th release fails after adding its units to another row of
		// its group: the group's total is one the unknown release allows,
		// its rows are not.
		next := counter()
		st := &faulty{
			Store: memory.New(),
			release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
				if next() != 10 {
					return se.Release(ctx, k, n)
				}
				for _, r := range w.Initial {
					if r.Key.Group() == k.Group() && r.Key != k {
						se.Release(ctx, r.Key, n)
						return inventory.Result{}, errUnknown
					}
				}
				return inventory.Result{}, fmt.Errorf("group of %v has one row", k)
			},
		}
		res := runOn(t, cfg, st, w)
		if res.Errors != 1 || res.Check.OK {
			t.Fatalf("%d errors %q, check %+v", res.Errors, res.ErrorSamples, res.Check)
		}
		if v := strings.Join(res.Check.Violations, "\n"); !strings.Contains(v, "failed releases to it") {
			t.Fatalf("no violation names the row:\n%s", v)
		}
	})

	t.Run("failed capture and a unit moved", func(t *testing.T) {
		// The 10th capture fails unapplied, and the store moves a unit
		// from one row of the group to another: the total and the range
		// of the unknown capture are kept, but a row holds more than
		// anything in the run can have brought it.
		next := counter()
		st := &faulty{
			Store: memory.New(),
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				if next() != 10 {
					return se.Capture(ctx, g, n, lines)
				}
				res, err := se.Capture(ctx, g, 1, lines)
				if err != nil || res.Code != inventory.CodeOK {
					return inventory.Result{}, fmt.Errorf("moving a unit: %v %v", res.Code, err)
				}
				for _, r := range w.Initial {
					if r.Key.Group() == g && r.Key.Warehouse != res.Lines[0].Warehouse {
						se.Release(ctx, r.Key, 1)
						return inventory.Result{}, errUnknown
					}
				}
				return inventory.Result{}, fmt.Errorf("group %v has one row", g)
			},
		}
		res := runOn(t, cfg, st, w)
		if res.Errors != 1 || res.Check.OK {
			t.Fatalf("%d errors %q, check %+v", res.Errors, res.ErrorSamples, res.Check)
		}
		if v := strings.Join(res.Check.Violations, "\n"); !strings.Contains(v, "failed releases to it") {
			t.Fatalf("no violation names the row:\n%s", v)
		}
	})
}
