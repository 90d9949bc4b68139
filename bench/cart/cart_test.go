package cart

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/store"
)

func runRef(t *testing.T, mode Mode, f flaw, p Params, opt Options) *bench.Result {
	t.Helper()
	w, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "ref"}}
	if err := cfg.RunConfig.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), mode, w, opt, cfg, newRefStore(f))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkoutParams() Params {
	return Params{Preset: PresetHot, Carts: 3000, Seed: 7, ConfirmShare: 0.7, CancelShare: 0.2, ResendShare: 0.05}
}

func fastOptions() Options {
	return Options{TTL: 30 * time.Millisecond, ExpiryWait: 2 * time.Second, Sweep: store.CheckoutConfig{SweepInterval: 2 * time.Millisecond}}
}

func TestCheckoutOnReferencePasses(t *testing.T) {
	res := runRef(t, ModeCheckout, flawNone, checkoutParams(), fastOptions())
	if !res.Check.OK || res.Status != bench.StatusOK {
		t.Fatalf("check failed on the reference store: %v", res.Check.Violations)
	}
	x := res.Extra
	if x["duplicates"].(int64) != 0 || x["resends"].(int64) == 0 {
		t.Errorf("duplicates %v resends %v: want 0 duplicates out of some resends", x["duplicates"], x["resends"])
	}
	if x["expired"].(int64) == 0 || x["confirmed"].(int64) == 0 || x["cancelled"].(int64) == 0 || x["insufficient"].(int64) == 0 {
		t.Errorf("want every fate and some insufficient carts in the hot preset, got %v", x)
	}
	if x["expiry_lag_samples"].(int) == 0 {
		t.Errorf("no expiry lag measured: %v", x)
	}
	if res.Ops != 3000 {
		t.Errorf("ops = %d, want 3000", res.Ops)
	}
}

// The expiry lag measured is the store's, not the watcher's: a store that
// expires holds lateExpiryMS late is measured at least that late, and a
// store whose sweeper runs every 2 ms is measured well under that, even
// when each look at a hold takes 2 ms and hundreds of abandoned holds come
// due together (a watcher that timed every one of them, one look after
// another, measured its own queue: hundreds of milliseconds).
func TestExpiryLagIsTheStores(t *testing.T) {
	p := checkoutParams()
	p.Carts = 60000
	lag := func(f flaw) (p50, p99 float64) {
		s := newRefStore(f)
		// The expiry watcher's session (the one opened after the
		// workers') looks slowly.
		s.slowSession, s.slowHoldGet = 5, 2*time.Millisecond
		s.holdPause = time.Millisecond
		w, err := Generate(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "ref"}}
		res, err := Run(context.Background(), ModeCheckout, w, fastOptions(), cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		x := res.Extra
		if x["expiry_lag_samples"].(int) < 20 {
			t.Fatalf("flaw %d: too few holds timed: %v", f, x)
		}
		t.Logf("flaw %d: %v holds timed", f, x["expiry_lag_samples"])
		return x["expiry_lag_p50_ms"].(float64), x["expiry_lag_p99_ms"].(float64)
	}
	onP50, onP99 := lag(flawNone)
	lateP50, _ := lag(flawLateExpiry)
	t.Logf("expiry lag p50/p99: on time %.1f/%.1f ms, late %.1f ms", onP50, onP99, lateP50)
	if lateP50 < lateExpiryMS {
		t.Errorf("a store expiring %d ms late measured at a p50 of %.1f ms", lateExpiryMS, lateP50)
	}
	if onP99 >= lateP50 {
		t.Errorf("a store expiring on time measured at a p99 of %.1f ms, no better than one %d ms late (%.1f ms)", onP99, lateExpiryMS, lateP50)
	}
}

func TestOrderOnReferencePasses(t *testing.T) {
	p := checkoutParams()
	p.Lines, p.ConfirmShare, p.CancelShare = 2, 1, 0
	res := runRef(t, ModeOrder, flawNone, p, Options{})
	if !res.Check.OK {
		t.Fatalf("check failed on the reference store: %v", res.Check.Violations)
	}
	if res.Extra["insufficient"].(int64) == 0 {
		t.Errorf("want some insufficient orders: %v", res.Extra)
	}
}

// Each flaw of the reference store must fail the check, with a violation
// that names what went wrong.
func TestCheckerCatchesBrokenStores(t *testing.T) {
	orderParams := checkoutParams()
	orderParams.Lines, orderParams.ConfirmShare, orderParams.CancelShare = 4, 1, 0
	resendAll := checkoutParams()
	resendAll.ResendShare = 0.5
	// An oversold hold that is later covered by units other carts give
	// back leaves no trace in the final rows; with every hold confirmed
	// the oversell stays.
	confirmAll := checkoutParams()
	confirmAll.ConfirmShare, confirmAll.CancelShare = 1, 0
	for _, tc := range []struct {
		name string
		mode Mode
		flaw flaw
		p    Params
		want string
	}{
		{"no same-group summing, hold", ModeCheckout, flawNoSum, confirmAll, "below zero"},
		{"no same-group summing, order", ModeOrder, flawNoSum, orderParams, "below zero"},
		{"no idempotency, hold", ModeCheckout, flawNoIdempotency, resendAll, "answered differently"},
		// A repeat applied again often gets the very lines of the first (the
		// same warehouses still have stock): the rows show it.
		{"no idempotency, order", ModeOrder, flawNoIdempotency, orderParams, "not accounted for"},
		{"no expiry", ModeCheckout, flawNoExpiry, checkoutParams(), "still held"},
		{"cancel keeps units", ModeCheckout, flawCancelKeepsUnits, checkoutParams(), "not accounted for"},
		{"partial order", ModeOrder, flawPartialOrder, orderParams, "not accounted for"},
		{"expiry to the wrong row", ModeCheckout, flawWrongRow, checkoutParams(), "units more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := fastOptions()
			if tc.flaw == flawNoExpiry {
				opt.ExpiryWait = 100 * time.Millisecond
			}
			res := runRef(t, tc.mode, tc.flaw, tc.p, opt)
			if res.Check.OK || res.Status != bench.StatusCheckFailed {
				t.Fatalf("the check passed a store with flaw %q", tc.name)
			}
			all := strings.Join(res.Check.Violations, "\n")
			if !strings.Contains(all, tc.want) {
				t.Fatalf("violations do not mention %q:\n%s", tc.want, all)
			}
		})
	}
}

func TestGenerateIsDeterministicAndSkewed(t *testing.T) {
	p := checkoutParams()
	a, _ := Generate(p)
	b, _ := Generate(p)
	counts := map[string]int{}
	fates := map[Fate]int{}
	for i := range a.Carts {
		if len(a.Carts[i].Lines) != len(b.Carts[i].Lines) || a.Carts[i].Fate != b.Carts[i].Fate {
			t.Fatalf("cart %d differs between two runs of one seed", i)
		}
		for j, l := range a.Carts[i].Lines {
			if l != b.Carts[i].Lines[j] {
				t.Fatalf("cart %d line %d differs", i, j)
			}
			counts[l.Group.SKU]++
		}
		fates[a.Carts[i].Fate]++
	}
	if counts["hot-1"] <= 2*counts["hot-5"] {
		t.Errorf("hot preset not skewed: %v", counts)
	}
	n := float64(len(a.Carts))
	if c := float64(fates[FateConfirm]) / n; c < 0.65 || c > 0.75 {
		t.Errorf("confirm share %.2f, want about 0.7", c)
	}
	if c := float64(fates[FateAbandon]) / n; c < 0.07 || c > 0.13 {
		t.Errorf("abandon share %.2f, want about 0.1", c)
	}
	if _, err := Generate(Params{Preset: "cold", Carts: 1}); err == nil {
		t.Error("an unknown preset was accepted")
	}
}
