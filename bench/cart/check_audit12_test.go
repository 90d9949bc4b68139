package cart

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/store"
)

// refuseAllStore is the reference store answering every hold and every
// order INSUFFICIENT on its first line, reporting 0 available: the
// available figure gives the checker nothing to hold against it, nothing
// is taken, so the rows and repeats agree.
type refuseAllStore struct{ *refStore }

func (s *refuseAllStore) Session(context.Context) (store.Session, error) { return s, nil }

func (s *refuseAllStore) refuse(lines []store.CartLine, res *store.HoldResult) {
	res.Reset()
	res.Code, res.Short, res.Available = store.CheckoutInsufficient, 0, 0
}

func (s *refuseAllStore) Hold(_ context.Context, _ string, _ time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	s.refuse(lines, res)
	return nil
}

func (s *refuseAllStore) Order(_ context.Context, _ string, lines []store.CartLine, res *store.HoldResult) error {
	s.refuse(lines, res)
	return nil
}

// A store that refused every cart, saying 0 was available, passed: the
// INSUFFICIENT rule only questioned a refusal whose reported available
// covered the demand, and nothing else compared anything. Every refusal
// of a cart whose group held, throughout the run, at least its demand
// (initial total minus every cart acknowledged or of unknown outcome) is
// wrong, and a run in which no cart succeeded while stock existed
// compared nothing.
func TestAudit12RefusingEverythingWithZeroAvailableFails(t *testing.T) {
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
			cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "refuse-all"}}
			if err := cfg.RunConfig.Validate(); err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), tc.mode, w, fastOptions(), cfg, &refuseAllStore{newRefStore(flawNone)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Check.OK || res.Status != bench.StatusCheckFailed || !res.Failed() {
				t.Fatalf("a store refusing all %d carts with 0 available passed the check (ok=%v, status %s)", res.Extra["insufficient"], res.Check.OK, res.Status)
			}
			all := strings.Join(res.Check.Violations, "\n")
			if !strings.Contains(all, "held at least") {
				t.Errorf("violations do not name a refusal the group's floor covered:\n%s", all)
			}
			if !strings.Contains(all, "compared nothing") {
				t.Errorf("violations do not say the check compared nothing:\n%s", all)
			}
		})
	}
}

// The floor rule is sound: the reference store, whose refusals are all
// true, still passes under the same contention, with refusals to judge.
func TestAudit12FloorRuleHoldsOnTheReference(t *testing.T) {
	orderParams := checkoutParams()
	orderParams.Lines, orderParams.ConfirmShare, orderParams.CancelShare = 2, 1, 0
	for _, tc := range []struct {
		mode Mode
		p    Params
	}{{ModeCheckout, checkoutParams()}, {ModeOrder, orderParams}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			res := runRef(t, tc.mode, flawNone, tc.p, fastOptions())
			if !res.Check.OK || res.Extra["insufficient"].(int64) == 0 {
				t.Fatalf("reference store: check %v, %v insufficient", res.Check.Violations, res.Extra["insufficient"])
			}
		})
	}
}
