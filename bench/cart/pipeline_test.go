package cart

import (
	"context"
	"errors"
	"strings"
	"testing"

	"allot/bench"
	"allot/store"
)

// pipeFlaw is a defect of the reference store's pipelined calls.
type pipeFlaw uint8

const (
	pipeCorrect pipeFlaw = iota
	// pipeFlaky answers some calls with an error (outcome unknown): some
	// of them applied, some not, and never the same call more than
	// flakyMax times, so that a runner that repeats a call CallRetries
	// times always gets its answer. A correct runner repeats them and the
	// check still passes.
	pipeFlaky
	// pipeShuffled hands each hold's reply to the next hold of the batch:
	// replies matched to the wrong carts.
	pipeShuffled
)

// pipeRefStore is the reference store with store.CheckoutPipeliner
// sessions: each batch's calls run one after another on the reference
// store's methods.
type pipeRefStore struct {
	*refStore
	pflaw pipeFlaw
	calls int
	// failed counts the errors pipeFlaky gave each call (kind and hold).
	failed map[flakeKey]int
}

// flakeKey names one call: its kind and hold.
type flakeKey struct {
	kind store.CheckoutCallKind
	hold string
}

// flakyMax is how often pipeFlaky fails one call at most: fewer than
// CallRetriesDefault, so no cart is left with an unknown outcome (which
// the check rightly reports for a repeat) by a store that fails at random
// (calls one in 7 and one in 11 of a shared counter could otherwise fail
// the same call four rounds running).
const flakyMax = CallRetriesDefault - 1

// flake reports whether call c, the store's nth, fails this time.
func (s *pipeRefStore) flake(c *store.CheckoutCall, n, every int) bool {
	if s.pflaw != pipeFlaky || n%every != 0 {
		return false
	}
	key := flakeKey{c.Kind, c.Hold}
	s.refStore.mu.Lock()
	defer s.refStore.mu.Unlock()
	if s.failed == nil {
		s.failed = map[flakeKey]int{}
	}
	if s.failed[key] >= flakyMax {
		return false
	}
	s.failed[key]++
	return true
}

func (s *pipeRefStore) Session(context.Context) (store.Session, error) { return s, nil }

func (s *pipeRefStore) CheckoutPipeline(ctx context.Context, calls []store.CheckoutCall) error {
	var holds []int
	for i := range calls {
		c := &calls[i]
		c.Reset()
		s.refStore.mu.Lock()
		s.calls++
		n := s.calls
		s.refStore.mu.Unlock()
		if s.flake(c, n, 11) {
			c.Err = errors.New("ref: lost before it was applied")
			continue
		}
		var err error
		switch c.Kind {
		case store.CallHold:
			err = s.Hold(ctx, c.Hold, c.TTL, c.Lines, &c.Res)
			c.Code = c.Res.Code
			holds = append(holds, i)
		case store.CallConfirm:
			c.Code, err = s.Confirm(ctx, c.Hold)
		case store.CallCancel:
			c.Code, err = s.Cancel(ctx, c.Hold)
		}
		if err != nil {
			return err
		}
		if s.flake(c, n, 7) {
			c.Err = errors.New("ref: reply lost after it was applied")
		}
	}
	if s.pflaw == pipeShuffled && len(holds) > 1 {
		last := calls[holds[len(holds)-1]].Res
		for k := len(holds) - 1; k > 0; k-- {
			calls[holds[k]].Res = calls[holds[k-1]].Res
			calls[holds[k]].Code = calls[holds[k]].Res.Code
		}
		calls[holds[0]].Res, calls[holds[0]].Code = last, last.Code
	}
	return nil
}

var _ store.CheckoutPipeliner = (*pipeRefStore)(nil)

func runPipelinedRef(t *testing.T, st store.Store, depth int) *bench.Result {
	t.Helper()
	w, err := Generate(checkoutParams())
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "ref", Pipeline: depth}}
	if err := cfg.RunConfig.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), ModeCheckout, w, fastOptions(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPipelinedCheckoutOnReferencePasses(t *testing.T) {
	for _, f := range []pipeFlaw{pipeCorrect, pipeFlaky} {
		res := runPipelinedRef(t, &pipeRefStore{refStore: newRefStore(flawNone), pflaw: f}, 16)
		if !res.Check.OK {
			t.Fatalf("flaw %d: check failed on the pipelined reference store: %v", f, res.Check.Violations)
		}
		x := res.Extra
		if res.Ops != 3000 || x["expired"].(int64) == 0 || x["confirmed"].(int64) == 0 || x["resends"].(int64) == 0 {
			t.Errorf("flaw %d: ops %d, extra %v: want 3000 carts with every fate and some resends", f, res.Ops, x)
		}
		// 3,000 carts over 4 workers at 16 new carts a round: about 190
		// rounds, each carrying a round's holds and the finishes of the
		// one before.
		if rounds := x["pipeline_rounds"].(int64); rounds < 150 || rounds > 400 {
			t.Errorf("flaw %d: %d rounds, want about 190", f, rounds)
		}
		if cpr := x["pipeline_calls_per_round"].(float64); cpr < 20 {
			t.Errorf("flaw %d: %.1f calls a round, want holds and finishes together (about 30)", f, cpr)
		}
		if f == pipeFlaky && res.Errors == 0 {
			t.Errorf("the flaky store reported no unknown outcomes")
		}
	}
}

func TestPipelinedCheckerCatchesShuffledReplies(t *testing.T) {
	res := runPipelinedRef(t, &pipeRefStore{refStore: newRefStore(flawNone), pflaw: pipeShuffled}, 16)
	if res.Check.OK || res.Status != bench.StatusCheckFailed {
		t.Fatal("the check passed a store that hands replies to the wrong carts")
	}
	if all := strings.Join(res.Check.Violations, "\n"); !strings.Contains(all, "read back with lines") && !strings.Contains(all, "the cart asked for") {
		t.Fatalf("violations do not say the replies' lines are not the carts':\n%s", all)
	}
}

// The closed-loop flaws stay caught when the same store is pipelined.
func TestPipelinedCheckerCatchesBrokenStores(t *testing.T) {
	for _, tc := range []struct {
		flaw flaw
		want string
	}{
		{flawNoIdempotency, "answered differently"},
		{flawCancelKeepsUnits, "not accounted for"},
		{flawWrongRow, "units more"},
	} {
		res := runPipelinedRef(t, &pipeRefStore{refStore: newRefStore(tc.flaw)}, 16)
		all := strings.Join(res.Check.Violations, "\n")
		if res.Check.OK || !strings.Contains(all, tc.want) {
			t.Errorf("flaw %d: check OK %v, violations do not mention %q:\n%s", tc.flaw, res.Check.OK, tc.want, all)
		}
	}
}

func TestPipelineRefusedWithoutCapability(t *testing.T) {
	w, err := Generate(checkoutParams())
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 2, Store: "ref", Pipeline: 8}}
	if err := cfg.RunConfig.Validate(); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), ModeCheckout, w, fastOptions(), cfg, newRefStore(flawNone))
	if !errors.Is(err, bench.ErrUnsupported) || !strings.Contains(err.Error(), "store ref cannot keep checkout calls in flight") {
		t.Fatalf("a store without CheckoutPipeliner at --pipeline 8: got %v, want ErrUnsupported naming the store", err)
	}
	_, err = Run(context.Background(), ModeOrder, w, fastOptions(), cfg, &pipeRefStore{refStore: newRefStore(flawNone)})
	if err == nil || !strings.Contains(err.Error(), "order workload sends one order at a time") {
		t.Fatalf("order at --pipeline 8: got %v, want a refusal", err)
	}
}
