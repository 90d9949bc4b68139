package cart

import (
	"context"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/store"
)

// refusingStore is the reference store with a wrong answer: about one
// hold or order in refuseEvery (chosen by its id, so that a repeat gets
// the same answer) is answered INSUFFICIENT without being tried, naming
// its first line and that group's true total, although the stock
// suffices. Nothing is taken and repeats agree, so the rows and the
// idempotency checks see nothing: only the reply is wrong.
type refusingStore struct {
	*refStore
	refuseEvery uint32
}

func (s *refusingStore) Session(context.Context) (store.Session, error) { return s, nil }

// refuse answers a cart INSUFFICIENT when the cart's turn has come and its
// first line's group holds enough; it reports whether it did.
func (s *refusingStore) refuse(id string, lines []store.CartLine, res *store.HoldResult) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	if h.Sum32()%s.refuseEvery != 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := store.SumCart(lines, nil)
	var total int64
	for _, w := range s.groups[d[0].Group] {
		total += s.rows[d[0].Group.Row(w)].Count
	}
	if total < d[0].N {
		return false
	}
	res.Reset()
	res.Code, res.Short, res.Available = store.CheckoutInsufficient, d[0].First, total
	return true
}

func (s *refusingStore) Hold(ctx context.Context, id string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	if s.refuse(id, lines, res) {
		return nil
	}
	return s.refStore.Hold(ctx, id, ttl, lines, res)
}

func (s *refusingStore) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if s.refuse(key, lines, res) {
		return nil
	}
	return s.refStore.Order(ctx, key, lines, res)
}

// A refusal that names more stock than the cart asked for is a wrong
// answer, whatever else ran at the time: the available it names is the
// group's total at the moment the store decided, and a store that decided
// "short" saw less than the demand. The check must fail such a run.
func TestPowerInsufficientWithEnoughStock(t *testing.T) {
	orderParams := checkoutParams()
	orderParams.Lines, orderParams.ConfirmShare, orderParams.CancelShare = 2, 1, 0
	for _, tc := range []struct {
		mode Mode
		p    Params
	}{{ModeCheckout, checkoutParams()}, {ModeOrder, orderParams}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			w, err := Generate(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "refusing"}}
			if err := cfg.RunConfig.Validate(); err != nil {
				t.Fatal(err)
			}
			st := &refusingStore{refStore: newRefStore(flawNone), refuseEvery: 10}
			res, err := Run(context.Background(), tc.mode, w, fastOptions(), cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Check.OK || res.Status != bench.StatusCheckFailed || !res.Failed() {
				t.Fatalf("a store refusing carts it had the stock for passed the check (%v insufficient)", res.Extra["insufficient"])
			}
			if all := strings.Join(res.Check.Violations, "\n"); !strings.Contains(all, "refused with") {
				t.Fatalf("violations do not name the wrong refusal:\n%s", all)
			}
		})
	}
}

// A correct store's refusals all name less than the demand: the new rule
// holds on the reference store under the same contention.
func TestPowerInsufficientRuleHoldsOnTheReference(t *testing.T) {
	res := runRef(t, ModeCheckout, flawNone, checkoutParams(), fastOptions())
	if !res.Check.OK || res.Extra["insufficient"].(int64) == 0 {
		t.Fatalf("reference store: check %v, %v insufficient", res.Check.Violations, res.Extra["insufficient"])
	}
}
