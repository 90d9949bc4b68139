package bench

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
)

// Power of the check's rules no earlier test breaks alone: each store
// here applies every op correctly and breaks one rule only, so that the
// one rule must find it.
func TestAudit16CheckPower(t *testing.T) {
	w := genWorkload(t, "hot", 3000)
	cfg := RunConfig{Workers: 1, RetryDelay: time.Microsecond, RetryMax: 2}
	// lastWarehouse is the last of g's warehouses in allocation order.
	lastWarehouse := func(g inventory.GroupKey) string {
		var out []string
		for _, r := range w.Initial {
			if r.Key.Group() == g {
				out = append(out, r.Key.Warehouse)
			}
		}
		return slices.Max(out)
	}
	t.Run("a line of no units", func(t *testing.T) {
		// Takes the right units and names a warehouse it took nothing
		// from, in order: every sum and every row is right.
		added := 0
		st := &faulty{Store: memory.New(), capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
			res, err := se.Capture(ctx, g, n, lines)
			if err != nil || res.Code != inventory.CodeOK {
				return res, err
			}
			if wh := lastWarehouse(g); res.Lines[len(res.Lines)-1].Warehouse != wh {
				res.Lines = append(res.Lines, inventory.Line{Warehouse: wh, Count: 0})
				added++
			}
			return res, err
		}}
		res := runOn(t, cfg, st, w)
		if added == 0 {
			t.Fatal("no capture left a later warehouse untouched")
		}
		if res.Check.OK {
			t.Fatalf("%d replies with a line of no units passed the check", added)
		}
		for _, v := range res.Check.Violations {
			if !strings.Contains(v, "not above zero") {
				t.Fatalf("a violation other than the line of no units: %s", v)
			}
		}
	})
	t.Run("a row read back twice", func(t *testing.T) {
		st := &faulty{Store: memory.New(), rows: func(rows []inventory.Row) []inventory.Row {
			return append(rows, rows[len(rows)/2])
		}}
		res := runOn(t, cfg, st, w)
		if res.Check.OK || !strings.Contains(strings.Join(res.Check.Violations, "\n"), "read back twice") {
			t.Fatalf("a row read back twice: check %+v", res.Check)
		}
	})
}

// naiveMemory is the control of DESIGN.md in the bench's process: a
// capture reads its group, lets other sessions run, then writes each
// row's new count as read minus taken, with nothing in between to stop
// another session (what naive-postgres does with SQL). Releases add
// atomically. Run alone it is sound; run by several workers on the hot
// preset, captures overwrite each other and the units they took are
// sold again.
type naiveMemory struct {
	mu    sync.Mutex
	count map[inventory.RowKey]int64
	rows  []inventory.RowKey
}

func (s *naiveMemory) Load(_ context.Context, rows []inventory.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count = make(map[inventory.RowKey]int64, len(rows))
	s.rows = s.rows[:0]
	for _, r := range rows {
		s.count[r.Key] = r.Count
		s.rows = append(s.rows, r.Key)
	}
	slices.SortFunc(s.rows, inventory.CompareRowKeys)
	return nil
}

func (s *naiveMemory) Rows(context.Context) ([]inventory.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]inventory.Row, 0, len(s.rows))
	for _, k := range s.rows {
		out = append(out, inventory.Row{Key: k, Count: s.count[k]})
	}
	return out, nil
}

func (s *naiveMemory) Session(context.Context) (store.Session, error) { return s, nil }
func (s *naiveMemory) Close() error                                   { return nil }

func (s *naiveMemory) Capture(_ context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	var stock []inventory.Line
	s.mu.Lock()
	for _, k := range s.rows {
		if k.Group() == g {
			stock = append(stock, inventory.Line{Warehouse: k.Warehouse, Count: s.count[k]})
		}
	}
	s.mu.Unlock()
	res := inventory.Allocate(stock, n, lines)
	if res.Code != inventory.CodeOK {
		return res, nil
	}
	runtime.Gosched() // between the read and the write
	s.mu.Lock()
	for _, l := range res.Lines {
		k := inventory.RowKey{SKU: g.SKU, Warehouse: l.Warehouse, Condition: g.Condition, Source: g.Source}
		for _, st := range stock {
			if st.Warehouse == l.Warehouse {
				s.count[k] = st.Count - l.Count
			}
		}
	}
	s.mu.Unlock()
	return res, nil
}

func (s *naiveMemory) Release(_ context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.count[k]
	if !ok {
		return inventory.Result{Code: inventory.CodeNotFound}, nil
	}
	s.count[k] = c + n
	return inventory.Result{Code: inventory.CodeOK, Count: c + n}, nil
}

// The checker catches the naive control's overselling end to end, under
// the contention it is meant for (16 workers on the hot preset), and
// passes the same control run by one worker, where nothing interleaves.
func TestAudit16CheckCatchesTheNaiveControl(t *testing.T) {
	w := genWorkload(t, "hot", 5000)
	alone := runOn(t, RunConfig{Workers: 1, RetryDelay: time.Microsecond}, &naiveMemory{}, w)
	if !alone.Check.OK || alone.Failed() {
		t.Fatalf("the control alone: errors %d %q, check %+v", alone.Errors, alone.ErrorSamples, alone.Check)
	}
	res := runOn(t, RunConfig{Workers: 16, RetryDelay: 50 * time.Microsecond}, &naiveMemory{}, w)
	if res.Check.OK || res.Status != StatusCheckFailed || !res.Failed() {
		t.Fatalf("the naive control under contention passed: status %s, check %+v", res.Status, res.Check)
	}
	if v := strings.Join(res.Check.Violations, "\n"); !strings.Contains(v, "oversold") {
		t.Fatalf("no violation says oversold:\n%s", v)
	}
	t.Logf("%d violations, e.g. %s", res.Check.ViolationCount, res.Check.Violations[0])
}
