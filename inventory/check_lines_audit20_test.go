package inventory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// lineIDError matches Check's answer for a line's bad identifier, the one
// rule CheckValidLines may skip.
var lineIDError = regexp.MustCompile(`^line ([0-9]+): (sku|condition|source) `)

// lineQuantityError matches a line's bad quantity.
var lineQuantityError = regexp.MustCompile(`^line ([0-9]+): quantity `)

// TestCheckValidLinesMatchesCheck: over random holds and orders (0 to 65
// lines, duplicate lines, good and bad quantities, TTLs, hold ids and
// idempotency keys), CheckValidLines answers exactly what Check answers
// when every line's identifiers are valid. When some are not (its caller
// would not use it then), it differs only where Check names a line's bad
// identifier, and then it answers nothing earlier: "" or a quantity of
// that line or a later one. For every other kind it is Check.
func TestCheckValidLinesMatchesCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 7))
	goodIDs := []string{"sku", "new", "retail", "a", "ünïcode", strings.Repeat("x", IDBytesMax)}
	badIDs := []string{"", "a\x01b", "tab\there", "del\x7f", "n\xffew", "c1\u0085", strings.Repeat("y", IDBytesMax+1)}
	goodQuantities := []int64{1, 2, 7, QuantityMax}
	badQuantities := []int64{0, -1, QuantityMax + 1, CountMax, math.MinInt64, math.MaxInt64}
	ttls := []int64{1, 600000, HoldTTLMax, 0, -1, HoldTTLMax + 1, math.MinInt64, math.MaxInt64}
	holds := []string{"h1", "cart-42", "", "bad\nhold", strings.Repeat("h", IDBytesMax+1)}
	keys := []string{"", "", "k1", "bad\x01key", strings.Repeat("k", IDBytesMax+1), "\xff"}
	pick := func(good, bad []string, badOdds int) string {
		if badOdds > 0 && rng.IntN(badOdds) == 0 {
			return bad[rng.IntN(len(bad))]
		}
		return good[rng.IntN(len(good))]
	}
	answers := map[string]int{} // the answers seen with every line valid
	var lines []Demand
	for i := 0; i < 60000; i++ {
		op := Op{Kind: KindHold, Hold: holds[rng.IntN(len(holds))], TTL: ttls[rng.IntN(len(ttls))], IdempotencyKey: keys[rng.IntN(len(keys))]}
		switch rng.IntN(8) {
		case 0, 1, 2:
			op.Kind = KindOrder
		case 3:
			op.Kind = Kind(rng.IntN(kindMax + 2)) // any kind, lines or not
		}
		if op.Kind == KindHold && rng.IntN(6) != 0 {
			op.IdempotencyKey = "" // else "hold takes no idempotency key" hides the rest
		}
		n := rng.IntN(HoldLinesMax + 2)
		if rng.IntN(2) == 0 {
			n = 1 + rng.IntN(4) // few lines, so later rules are reached often
		}
		idOdds := 0 // every identifier valid
		if rng.IntN(3) == 0 {
			idOdds = 1 + rng.IntN(3*n+1)
		}
		quantityOdds := 0
		if rng.IntN(2) == 0 {
			quantityOdds = 1 + rng.IntN(2*n+1)
		}
		lines = lines[:0]
		for j := 0; j < n; j++ {
			if j > 0 && rng.IntN(6) == 0 {
				lines = append(lines, lines[rng.IntN(j)]) // a duplicate line
				continue
			}
			q := goodQuantities[rng.IntN(len(goodQuantities))]
			if quantityOdds > 0 && rng.IntN(quantityOdds) == 0 {
				q = badQuantities[rng.IntN(len(badQuantities))]
			}
			lines = append(lines, Demand{Group: GroupKey{SKU: pick(goodIDs, badIDs, idOdds), Condition: pick(goodIDs, badIDs, idOdds), Source: pick(goodIDs, badIDs, idOdds)}, N: q})
		}
		op.Lines = lines
		allValid := true
		for _, l := range lines {
			allValid = allValid && CheckGroupKey(l.Group) == ""
		}
		want, got := op.Check(), op.CheckValidLines()
		describe := func() string {
			return fmt.Sprintf("%s hold %q ttl %d key %q, %d lines %+v", op.Kind, op.Hold, op.TTL, op.IdempotencyKey, len(op.Lines), op.Lines)
		}
		if allValid || (op.Kind != KindHold && op.Kind != KindOrder) {
			if got != want {
				t.Fatalf("CheckValidLines %q, Check %q: %s", got, want, describe())
			}
			if allValid && (op.Kind == KindHold || op.Kind == KindOrder) {
				answers[op.Kind.String()+": "+lineQuantityError.ReplaceAllString(want, "line N: quantity ")]++
			}
			continue
		}
		m := lineIDError.FindStringSubmatch(want)
		if m == nil {
			if got != want {
				t.Fatalf("Check %q names no line's identifier, yet CheckValidLines %q: %s", want, got, describe())
			}
			continue
		}
		if got == "" {
			continue
		}
		q := lineQuantityError.FindStringSubmatch(got)
		if q == nil {
			t.Fatalf("Check %q, CheckValidLines %q, neither \"\" nor a line's quantity: %s", want, got, describe())
		}
		if k, j := atoi(t, m[1]), atoi(t, q[1]); j < k {
			t.Fatalf("Check %q, CheckValidLines %q names an earlier line: %s", want, got, describe())
		}
	}
	// Every rule was reached with every line valid, so each was compared.
	for _, a := range []string{
		"hold: ", "order: ",
		"hold: a hold or an order takes 1 to 64 lines", "order: a hold or an order takes 1 to 64 lines",
		"hold: line N: quantity must be an integer from 1 to 2147483647",
		"order: line N: quantity must be an integer from 1 to 2147483647",
		"hold: ttl must be an integer from 1 to 604800000 milliseconds",
		"hold: hold is empty", "hold: hold contains a control character", "hold: hold is longer than 64 bytes",
		"hold: hold takes no idempotency key",
		"order: idempotency key contains a control character", "order: idempotency key is longer than 64 bytes",
		"order: idempotency key is not valid UTF-8",
	} {
		if answers[a] < 20 {
			t.Errorf("answer %q seen %d times with every line valid, want 20 or more (seen: %v)", a, answers[a], answers)
		}
	}
}

// TestCheckValidLinesPrecedence: the answers whose order the two checks
// must keep, one by one.
func TestCheckValidLinesPrecedence(t *testing.T) {
	g := GroupKey{SKU: "sku", Condition: "new", Source: "retail"}
	line := func(n int64) Demand { return Demand{Group: g, N: n} }
	many := func(k int) []Demand {
		ls := make([]Demand, k)
		for i := range ls {
			ls[i] = line(1)
		}
		return ls
	}
	for _, c := range []struct {
		op   Op
		want string
	}{
		{Hold("h1", 1000, []Demand{line(1), line(0), line(-1)}), "line 2: quantity must be an integer from 1 to 2147483647"},
		{Hold("h1", 0, []Demand{line(0)}), "ttl must be an integer from 1 to 604800000 milliseconds"},
		{Hold("", 0, []Demand{line(0)}), "hold is empty"},
		{Hold("h1", 0, nil), "ttl must be an integer from 1 to 604800000 milliseconds"},
		{Hold("h1", 1, nil), "a hold or an order takes 1 to 64 lines"},
		{Hold("h1", 1, many(HoldLinesMax)), ""},
		{Hold("h1", 1, many(HoldLinesMax+1)), "a hold or an order takes 1 to 64 lines"},
		{Order(many(HoldLinesMax + 1)), "a hold or an order takes 1 to 64 lines"},
		{Order(append(many(HoldLinesMax-1), line(QuantityMax+1))), "line 64: quantity must be an integer from 1 to 2147483647"},
		{Op{Kind: KindOrder, IdempotencyKey: "k\x01", Lines: []Demand{line(0)}}, "idempotency key contains a control character"},
		{Op{Kind: KindHold, Hold: "h\x01", TTL: 1, IdempotencyKey: "k1", Lines: []Demand{line(1)}}, "hold takes no idempotency key"},
		{Op{Kind: KindOrder, IdempotencyKey: "k1", Lines: []Demand{line(1), line(2)}}, ""},
	} {
		if got := c.op.Check(); got != c.want {
			t.Fatalf("%+v: Check %q, want %q", c.op, got, c.want)
		}
		if got := c.op.CheckValidLines(); got != c.want {
			t.Fatalf("%+v: CheckValidLines %q, want %q", c.op, got, c.want)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
