package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// RunCheckout runs the checkout conformance suite (DESIGN.md "Checkout:
// holds, orders, idempotency (contract v2)") against the stores open
// returns. Their sessions must implement store.Checkouter; store.Orderer
// is tested when they implement it. A store.CheckoutPreparer is prepared
// after each Load with a 5 ms sweep interval.
func RunCheckout(t *testing.T, open Opener) {
	t.Run("HoldSumsSameGroupLinesInRequestOrder", func(t *testing.T) { testHoldLines(t, open) })
	t.Run("HoldInsufficientNamesFirstShortLine", func(t *testing.T) { testHoldInsufficient(t, open) })
	t.Run("HoldRepeatAndMismatch", func(t *testing.T) { testHoldRepeat(t, open) })
	t.Run("ConfirmAndCancelAnswers", func(t *testing.T) { testConfirmCancel(t, open) })
	t.Run("ExpiryReturnsUnits", func(t *testing.T) { testExpiry(t, open) })
	t.Run("BadCheckoutInput", func(t *testing.T) { testCheckoutBadInput(t, open) })
	t.Run("ConcurrentHoldsNeverOversell", func(t *testing.T) { testConcurrentHolds(t, open) })
	t.Run("OrderAllOrNothingWithKeys", func(t *testing.T) { testOrder(t, open) })
}

var (
	cgA = inventory.GroupKey{SKU: "ck-a", Condition: "new", Source: "own"}
	cgB = inventory.GroupKey{SKU: "ck-b", Condition: "new", Source: "own"}
	cgC = inventory.GroupKey{SKU: "ck-c", Condition: "used", Source: "own"}
)

func checkoutRows() []inventory.Row {
	return []inventory.Row{
		{Key: cgA.Row("w2"), Count: 5, Price: 10},
		{Key: cgA.Row("w1"), Count: 2, Price: 10},
		{Key: cgB.Row("w1"), Count: 1, Price: 20},
		{Key: cgC.Row("w3"), Count: 4, Price: 30},
	}
}

type checkoutFixture struct {
	*fixture
	co store.Checkouter
	se store.Session
}

func setUpCheckout(t *testing.T, open Opener) *checkoutFixture {
	t.Helper()
	return setUpCheckoutSweeping(t, open, 5*time.Millisecond)
}

// setUpCheckoutSweeping is setUpCheckout with the store's expiry sweeper
// (if it has one) running every sweep.
func setUpCheckoutSweeping(t *testing.T, open Opener, sweep time.Duration) *checkoutFixture {
	t.Helper()
	f := setUp(t, open, checkoutRows())
	if p, ok := f.st.(store.CheckoutPreparer); ok {
		stop, err := p.PrepareCheckout(f.ctx, store.CheckoutConfig{SweepInterval: sweep})
		if err != nil {
			t.Fatalf("PrepareCheckout: %v", err)
		}
		t.Cleanup(func() {
			if err := stop(); err != nil {
				t.Errorf("stopping the sweeper: %v", err)
			}
		})
	}
	se := f.session()
	co, ok := se.(store.Checkouter)
	if !ok {
		t.Fatalf("%T does not implement store.Checkouter", se)
	}
	return &checkoutFixture{fixture: f, co: co, se: se}
}

// counts reads every row's count.
func (f *checkoutFixture) counts() map[inventory.RowKey]int64 {
	f.t.Helper()
	rows, err := f.st.Rows(f.ctx)
	if err != nil {
		f.t.Fatalf("Rows: %v", err)
	}
	m := map[inventory.RowKey]int64{}
	for _, r := range rows {
		m[r.Key] = r.Count
	}
	return m
}

func (f *checkoutFixture) hold(id string, ttl time.Duration, lines ...store.CartLine) store.HoldResult {
	f.t.Helper()
	var res store.HoldResult
	if err := f.co.Hold(f.ctx, id, ttl, lines, &res); err != nil {
		f.t.Fatalf("Hold(%s): %v", id, err)
	}
	return res
}

func (f *checkoutFixture) get(id string) (store.HoldInfo, bool) {
	f.t.Helper()
	var info store.HoldInfo
	found, err := f.co.HoldGet(f.ctx, id, &info)
	if err != nil {
		f.t.Fatalf("HoldGet(%s): %v", id, err)
	}
	return info, found
}

func (f *checkoutFixture) confirm(id string) store.CheckoutCode {
	f.t.Helper()
	c, err := f.co.Confirm(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Confirm(%s): %v", id, err)
	}
	return c
}

func (f *checkoutFixture) cancel(id string) store.CheckoutCode {
	f.t.Helper()
	c, err := f.co.Cancel(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Cancel(%s): %v", id, err)
	}
	return c
}

func (f *checkoutFixture) wantCounts(why string, want map[inventory.RowKey]int64) {
	f.t.Helper()
	got := f.counts()
	for k, w := range want {
		if got[k] != w {
			f.t.Errorf("%s: row %v holds %d, want %d", why, k, got[k], w)
		}
	}
}

func line(g inventory.GroupKey, n int64) store.CartLine { return store.CartLine{Group: g, N: n} }

func testHoldLines(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	before := time.Now().UnixMilli()
	res := f.hold("h1", time.Minute, line(cgB, 1), line(cgA, 2), line(cgC, 1), line(cgA, 1))
	want := []store.HoldLine{{Row: cgB.Row("w1"), Count: 1}, {Row: cgA.Row("w1"), Count: 2}, {Row: cgA.Row("w2"), Count: 1}, {Row: cgC.Row("w3"), Count: 1}}
	if res.Code != store.CheckoutOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("Hold = %v %v, want ok %v (same group summed, at its first line, warehouses ascending)", res.Code, res.Lines, want)
	}
	if res.ExpiresAtMS < before+60000-1000 || res.ExpiresAtMS > time.Now().UnixMilli()+60000+1000 {
		t.Errorf("expires at %d, want about now + 60000 (now %d)", res.ExpiresAtMS, time.Now().UnixMilli())
	}
	f.wantCounts("after the hold", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 4, cgB.Row("w1"): 0, cgC.Row("w3"): 3})
	info, found := f.get("h1")
	if !found || info.State != store.HoldHeld || info.ExpiresAtMS != res.ExpiresAtMS || !slices.Equal(info.Lines, want) {
		t.Errorf("HoldGet = %v %+v, want held with the hold's deadline and lines", found, info)
	}
	if _, found := f.get("nope"); found {
		t.Error("HoldGet found a hold never made")
	}
}

func testHoldInsufficient(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	before := f.counts()
	// Each line alone fits ck-a (7 units); summed (4 + 4) it does not.
	res := f.hold("h1", time.Minute, line(cgB, 1), line(cgA, 4), line(cgC, 1), line(cgA, 4))
	if res.Code != store.CheckoutInsufficient || res.Short != 1 || res.Available != 7 {
		t.Fatalf("Hold = %v short %d available %d, want insufficient at line index 1 with 7", res.Code, res.Short, res.Available)
	}
	unknown := inventory.GroupKey{SKU: "ck-none", Condition: "new", Source: "own"}
	res = f.hold("h2", time.Minute, line(cgA, 1), line(unknown, 1))
	if res.Code != store.CheckoutInsufficient || res.Short != 1 || res.Available != 0 {
		t.Fatalf("Hold with an unknown group = %v short %d available %d, want insufficient at 1 with 0", res.Code, res.Short, res.Available)
	}
	f.wantCounts("after refused holds", before)
}

func testHoldRepeat(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	first := f.hold("h1", time.Minute, line(cgA, 3), line(cgB, 1))
	again := f.hold("h1", 2*time.Minute, line(cgA, 3), line(cgB, 1))
	if again.Code != store.CheckoutOK || again.ExpiresAtMS != first.ExpiresAtMS || !slices.Equal(again.Lines, first.Lines) {
		t.Fatalf("repeat = %v %d %v, want the first reply %d %v", again.Code, again.ExpiresAtMS, again.Lines, first.ExpiresAtMS, first.Lines)
	}
	f.wantCounts("after a hold and its repeat", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 4, cgB.Row("w1"): 0})
	for _, other := range [][]store.CartLine{{line(cgA, 2), line(cgB, 1)}, {line(cgB, 1), line(cgA, 3)}, {line(cgA, 3)}} {
		if res := f.hold("h1", time.Minute, other...); res.Code != store.CheckoutMismatch {
			t.Errorf("hold h1 with other lines %v = %v, want mismatch", other, res.Code)
		}
	}
	if c := f.confirm("h1"); c != store.CheckoutOK {
		t.Fatalf("confirm = %v", c)
	}
	again = f.hold("h1", time.Minute, line(cgA, 3), line(cgB, 1))
	if again.Code != store.CheckoutOK || !slices.Equal(again.Lines, first.Lines) {
		t.Errorf("repeat after confirm = %v %v, want the first reply", again.Code, again.Lines)
	}
	f.wantCounts("after repeats", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 4, cgB.Row("w1"): 0})
}

func testConfirmCancel(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	f.hold("c", time.Minute, line(cgA, 3))
	f.hold("x", time.Minute, line(cgA, 4))
	f.wantCounts("two holds", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 0})
	for _, step := range []struct {
		what string
		call func(string) store.CheckoutCode
		id   string
		want store.CheckoutCode
	}{
		{"confirm", f.confirm, "c", store.CheckoutOK},
		{"confirm again", f.confirm, "c", store.CheckoutOK},
		{"cancel a confirmed", f.cancel, "c", store.CheckoutConfirmed},
		{"cancel", f.cancel, "x", store.CheckoutOK},
		{"cancel again", f.cancel, "x", store.CheckoutOK},
		{"confirm a cancelled", f.confirm, "x", store.CheckoutCancelled},
		{"confirm unknown", f.confirm, "nope", store.CheckoutNotFound},
		{"cancel unknown", f.cancel, "nope", store.CheckoutNotFound},
	} {
		if got := step.call(step.id); got != step.want {
			t.Errorf("%s %s = %v, want %v", step.what, step.id, got, step.want)
		}
	}
	// x's 4 units went back where they came from: w1 gave 0 (c took both), w2 gave 4.
	f.wantCounts("after confirm and cancel", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 4})
	for id, want := range map[string]store.HoldState{"c": store.HoldConfirmed, "x": store.HoldCancelled} {
		if info, found := f.get(id); !found || info.State != want {
			t.Errorf("HoldGet(%s) = %v %v, want %v", id, found, info.State, want)
		}
	}
}

func testExpiry(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	start := time.Now()
	f.hold("e", time.Second, line(cgA, 6), line(cgC, 2))
	f.hold("live", time.Hour, line(cgA, 1))
	if time.Since(start) < 900*time.Millisecond {
		f.wantCounts("held", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 0, cgC.Row("w3"): 2})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, found := f.get("e")
		if found && info.State == store.HoldExpired {
			break
		}
		if !found || info.State != store.HoldHeld || time.Now().After(deadline) {
			t.Fatalf("hold e: found %v state %v, want it expired within 10 s of its 1 s ttl", found, info.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// e's 6 units go back to w1 (2) and w2 (4); live still holds 1 of w2.
	f.wantCounts("expired", map[inventory.RowKey]int64{cgA.Row("w1"): 2, cgA.Row("w2"): 4, cgC.Row("w3"): 4})
	if c := f.confirm("e"); c != store.CheckoutExpired {
		t.Errorf("confirm an expired hold = %v, want expired", c)
	}
	if c := f.cancel("e"); c != store.CheckoutOK {
		t.Errorf("cancel an expired hold = %v, want ok", c)
	}
	if info, _ := f.get("live"); info.State != store.HoldHeld {
		t.Errorf("a hold with an hour to live is %v", info.State)
	}
	f.wantCounts("after answers on an expired hold", map[inventory.RowKey]int64{cgA.Row("w1"): 2, cgA.Row("w2"): 4, cgC.Row("w3"): 4})
}

func testCheckoutBadInput(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	before := f.counts()
	long := make([]store.CartLine, store.CartLinesMax+1)
	for i := range long {
		long[i] = line(cgA, 1)
	}
	for _, tc := range []struct {
		what  string
		id    string
		ttl   time.Duration
		lines []store.CartLine
	}{
		{"ttl 0", "b1", 0, []store.CartLine{line(cgA, 1)}},
		{"ttl over 7 days", "b2", store.HoldTTLMax + time.Millisecond, []store.CartLine{line(cgA, 1)}},
		{"65 lines", "b3", time.Minute, long},
		{"no lines", "b4", time.Minute, nil},
		{"empty id", "", time.Minute, []store.CartLine{line(cgA, 1)}},
		{"bad quantity", "b5", time.Minute, []store.CartLine{line(cgA, 0)}},
		{"control character", "b6", time.Minute, []store.CartLine{line(inventory.GroupKey{SKU: "a\x01", Condition: "new", Source: "own"}, 1)}},
	} {
		if res := f.hold(tc.id, tc.ttl, tc.lines...); res.Code != store.CheckoutInvalid || res.Detail == "" {
			t.Errorf("%s: Hold = %v %q, want invalid with a detail", tc.what, res.Code, res.Detail)
		}
	}
	f.wantCounts("after bad input", before)
	if res := f.hold("ok", time.Minute, line(cgA, 1)); res.Code != store.CheckoutOK {
		t.Errorf("the session is not usable after bad input: %v", res.Code)
	}
}

func testConcurrentHolds(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	const workers, each = 8, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := map[inventory.RowKey]int64{}
	errs := make(chan error, workers)
	for w := range workers {
		se := f.session()
		co := se.(store.Checkouter)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res store.HoldResult
			for i := range each {
				id := fmt.Sprintf("cc-%d-%d", w, i)
				// Same group twice and two groups: the lock order matters.
				lines := []store.CartLine{line(cgC, 1), line(cgA, 1), line(cgA, 1)}
				if i%2 == 1 {
					lines = []store.CartLine{line(cgA, 1), line(cgC, 1)}
				}
				if err := co.Hold(f.ctx, id, time.Hour, lines, &res); err != nil {
					errs <- err
					return
				}
				if res.Code == store.CheckoutOK {
					mu.Lock()
					for _, l := range res.Lines {
						held[l.Row] += l.Count
					}
					mu.Unlock()
					if i%3 == 0 {
						if _, err := co.Cancel(f.ctx, id); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for _, l := range res.Lines {
							held[l.Row] -= l.Count
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := f.counts()
	for _, r := range checkoutRows() {
		if got[r.Key] < 0 || got[r.Key]+held[r.Key] != r.Count {
			t.Errorf("row %v: holds %d with %d held, want %d in all and none below zero", r.Key, got[r.Key], held[r.Key], r.Count)
		}
	}
}

func testOrder(t *testing.T, open Opener) {
	f := setUpCheckout(t, open)
	o, ok := f.se.(store.Orderer)
	if !ok {
		t.Skipf("%T does not implement store.Orderer", f.se)
	}
	order := func(key string, lines ...store.CartLine) store.HoldResult {
		t.Helper()
		var res store.HoldResult
		if err := o.Order(f.ctx, key, lines, &res); err != nil {
			t.Fatalf("Order(%s): %v", key, err)
		}
		return res
	}
	res := order("k1", line(cgA, 2), line(cgB, 1), line(cgA, 1))
	want := []store.HoldLine{{Row: cgA.Row("w1"), Count: 2}, {Row: cgA.Row("w2"), Count: 1}, {Row: cgB.Row("w1"), Count: 1}}
	if res.Code != store.CheckoutOK || !slices.Equal(res.Lines, want) || res.ExpiresAtMS != 0 {
		t.Fatalf("Order = %v %v (expires %d), want ok %v", res.Code, res.Lines, res.ExpiresAtMS, want)
	}
	again := order("k1", line(cgA, 2), line(cgB, 1), line(cgA, 1))
	if again.Code != store.CheckoutOK || !slices.Equal(again.Lines, want) {
		t.Errorf("repeat = %v %v, want the first reply", again.Code, again.Lines)
	}
	if r := order("k1", line(cgA, 1)); r.Code != store.CheckoutMismatch {
		t.Errorf("key k1 with other lines = %v, want mismatch", r.Code)
	}
	f.wantCounts("one order, repeated", map[inventory.RowKey]int64{cgA.Row("w1"): 0, cgA.Row("w2"): 4, cgB.Row("w1"): 0})
	// All or nothing: ck-c fits, ck-b does not.
	short := order("k2", line(cgC, 2), line(cgB, 1))
	if short.Code != store.CheckoutInsufficient || short.Short != 1 || short.Available != 0 {
		t.Fatalf("Order = %v short %d available %d, want insufficient at 1 with 0", short.Code, short.Short, short.Available)
	}
	f.wantCounts("a refused order", map[inventory.RowKey]int64{cgC.Row("w3"): 4})
	// The key remembers the insufficient reply, even once stock is back.
	f.hold("tmp", time.Minute, line(cgC, 1))
	if r := order("k2", line(cgC, 2), line(cgB, 1)); r.Code != store.CheckoutInsufficient || r.Short != 1 {
		t.Errorf("repeat of an insufficient order = %v, want the first reply (insufficient)", r.Code)
	}
	// Without a key every call is a new order.
	order("", line(cgC, 1))
	order("", line(cgC, 1))
	f.wantCounts("two orders without a key", map[inventory.RowKey]int64{cgC.Row("w3"): 1})
	if r := order("k3"); r.Code != store.CheckoutInvalid {
		t.Errorf("an order without lines = %v, want invalid", r.Code)
	}
}
