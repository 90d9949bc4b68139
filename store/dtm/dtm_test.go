package dtm_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/bench/cart"
	"allot/bench/cart/carttest"
	"allot/inventory"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/dtm"
	"allot/workload"
)

func open(t *testing.T) store.Store {
	t.Helper()
	servicestest.Require(t, "redis")
	servicestest.Require(t, "dtm")
	st, err := dtm.Open(context.Background(), store.Config{Durability: store.DurabilityWrite, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var (
	gA = inventory.GroupKey{SKU: "dtm-a", Condition: "new", Source: "own"}
	gB = inventory.GroupKey{SKU: "dtm-b", Condition: "new", Source: "own"}
)

func counts(t *testing.T, st store.Store) map[inventory.RowKey]int64 {
	t.Helper()
	rows, err := st.Rows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[inventory.RowKey]int64{}
	for _, r := range rows {
		m[r.Key] = r.Count
	}
	return m
}

// TestSagaAllOrNothing: a saga whose second step is short is compensated
// by dtm, and the first step's units are back; a repeat of a key applies
// nothing; another cart under a used key is a mismatch.
func TestSagaAllOrNothing(t *testing.T) {
	st := open(t)
	defer st.Close()
	ctx := context.Background()
	if err := st.Load(ctx, []inventory.Row{
		{Key: gA.Row("w1"), Count: 2}, {Key: gA.Row("w2"), Count: 5}, {Key: gB.Row("w1"), Count: 1},
	}); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := se.(store.Orderer)
	var res store.HoldResult
	// dtm keeps finished sagas (a day) and refuses a gid twice: keys of
	// this run must not be those of an earlier one.
	run := strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	order := func(key string, lines ...store.CartLine) {
		t.Helper()
		if key != "" {
			key = run + key
		}
		if err := o.Order(ctx, key, lines, &res); err != nil {
			t.Fatal(err)
		}
	}
	order("k1", store.CartLine{Group: gA, N: 2}, store.CartLine{Group: gB, N: 1}, store.CartLine{Group: gA, N: 1})
	want := []store.HoldLine{{Row: gA.Row("w1"), Count: 2}, {Row: gA.Row("w2"), Count: 1}, {Row: gB.Row("w1"), Count: 1}}
	if res.Code != store.CheckoutOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("order = %v %v, want ok %v", res.Code, res.Lines, want)
	}
	order("k1", store.CartLine{Group: gA, N: 2}, store.CartLine{Group: gB, N: 1}, store.CartLine{Group: gA, N: 1})
	if res.Code != store.CheckoutOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("repeat = %v %v, want the first reply", res.Code, res.Lines)
	}
	order("k1", store.CartLine{Group: gA, N: 1})
	if res.Code != store.CheckoutMismatch {
		t.Fatalf("another cart under k1 = %v, want mismatch", res.Code)
	}
	// gA has 4 left, gB none: the first step captures 3 of gA, the second
	// fails, dtm compensates the first.
	order("k2", store.CartLine{Group: gA, N: 3}, store.CartLine{Group: gB, N: 1})
	if res.Code != store.CheckoutInsufficient || res.Short != 1 || res.Available != 0 {
		t.Fatalf("order = %v short %d available %d, want insufficient at 1 with 0", res.Code, res.Short, res.Available)
	}
	got := counts(t, st)
	for k, w := range map[inventory.RowKey]int64{gA.Row("w1"): 0, gA.Row("w2"): 4, gB.Row("w1"): 0} {
		if got[k] != w {
			t.Errorf("row %v holds %d, want %d (the failed saga must leave nothing behind)", k, got[k], w)
		}
	}
	st.(store.EmptyBrancher).SetEmptyBranches(true)
	order("", store.CartLine{Group: gA, N: 1})
	if res.Code != store.CheckoutOK || len(res.Lines) != 0 {
		t.Fatalf("empty branches: %v %v, want ok with no lines", res.Code, res.Lines)
	}
	if c := counts(t, st); c[gA.Row("w2")] != 4 {
		t.Errorf("empty branches changed a row: %v", c)
	}
}

func TestOrderBench(t *testing.T) {
	carttest.RunModesOnStore(t, open, cart.ModeOrder)
}

// TestReservationWorkloadIsNotRun: the reservation workload (captures and
// releases) is refused on dtm as one it cannot run: every op of it failed,
// and the run was reported with a check of OK.
func TestReservationWorkloadIsNotRun(t *testing.T) {
	st := open(t)
	defer st.Close()
	p, err := workload.Preset("hot")
	if err != nil {
		t.Fatal(err)
	}
	p.Ops = 100
	w, err := workload.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(context.Background(), bench.RunConfig{Workers: 2, Store: "dtm"}, st, w)
	if !errors.Is(err, bench.ErrUnsupported) || !strings.Contains(err.Error(), "order workload only") {
		t.Fatalf("the reservation workload on dtm: %+v, %v; want it refused as unsupported", res, err)
	}
}
