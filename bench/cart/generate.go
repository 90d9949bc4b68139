package cart

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"

	"allot/inventory"
	"allot/store"
)

// Presets of the generator: which groups carts draw from, and how much
// stock they hold.
const (
	// PresetHot is a flash sale: 5 SKUs x 4 warehouses in one condition and
	// source (20 rows in 5 groups), Zipf-skewed (s = 1) so that the first
	// group gets about 44% of the lines. Each row starts with 50 +
	// carts/4 units: about 5 units per cart in all, against about 4.2 taken
	// for good per cart (3 lines of 2 units, 70% confirmed), so the hottest
	// groups sell out during the run and later carts that ask for them are
	// insufficient, as in a real drop.
	PresetHot = "hot"
	// PresetWide is a catalogue: 10,000 SKUs x 10 warehouses (100,000 rows
	// in 10,000 groups), Zipf-skewed (s = 1.1), 0..20 units per row.
	PresetWide = "wide"
)

// Fate is what a cart does after its hold.
type Fate uint8

const (
	// FateConfirm: the buyer pays; the hold is confirmed.
	FateConfirm Fate = iota
	// FateCancel: the buyer gives up; the hold is cancelled.
	FateCancel
	// FateAbandon: the buyer walks away; the hold must expire.
	FateAbandon
)

func (f Fate) String() string {
	switch f {
	case FateConfirm:
		return "confirm"
	case FateCancel:
		return "cancel"
	case FateAbandon:
		return "abandon"
	}
	return fmt.Sprintf("fate(%d)", uint8(f))
}

// Limits of the generator.
const (
	// LinesMax is the most lines a generated cart has.
	LinesMax = 5
	// QuantityLineMax is the most units one generated line asks for.
	QuantityLineMax = 3
	// CartsMax bounds --ops for these workloads.
	CartsMax = 100_000_000
)

// Params determine a workload completely.
type Params struct {
	// Preset is PresetHot or PresetWide.
	Preset string
	// Carts is how many carts (or orders) to generate.
	Carts int
	Seed  uint64
	// Lines, when positive, gives every cart that many lines; 0 draws
	// 1..LinesMax uniformly.
	Lines int
	// ConfirmShare and CancelShare are the shares of carts confirmed and
	// cancelled; the rest are abandoned.
	ConfirmShare, CancelShare float64
	// ResendShare is the share of mutations re-sent with the same
	// idempotency key after a simulated timeout.
	ResendShare float64
}

// Validate checks the parameters.
func (p *Params) Validate() error {
	if p.Preset != PresetHot && p.Preset != PresetWide {
		return fmt.Errorf("cart: preset must be %s or %s, got %q", PresetHot, PresetWide, p.Preset)
	}
	if p.Carts < 1 || p.Carts > CartsMax {
		return fmt.Errorf("cart: ops must be from 1 to %d, got %d", CartsMax, p.Carts)
	}
	if p.Lines < 0 || p.Lines > LinesMax {
		return fmt.Errorf("cart: lines must be from 1 to %d, got %d", LinesMax, p.Lines)
	}
	for name, v := range map[string]float64{"confirm": p.ConfirmShare, "cancel": p.CancelShare, "resend": p.ResendShare} {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("cart: --%s must be a share from 0 to 1, got %g", name, v)
		}
	}
	if p.ConfirmShare+p.CancelShare > 1+1e-9 {
		return fmt.Errorf("cart: --confirm %g and --cancel %g add up to more than 1", p.ConfirmShare, p.CancelShare)
	}
	return nil
}

// Cart is one generated cart (or order).
type Cart struct {
	Lines []store.CartLine
	Fate  Fate
	// ResendHold and ResendFinish re-send the hold (or the order), and the
	// confirm or cancel, with the same key after a simulated timeout.
	ResendHold, ResendFinish bool
}

// Workload is what a run replays.
type Workload struct {
	Params Params
	// Rows are loaded before the carts; keys are distinct.
	Rows  []inventory.Row
	Carts []Cart
}

// source is the generator's randomness: a PCG (a specified algorithm) with
// bounded draws written out here, so the carts do not change when Go's
// helpers do.
type source struct{ pcg *rand.PCG }

func (s source) below(n uint64) uint64 {
	hi, lo := bits.Mul64(s.pcg.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(s.pcg.Uint64(), n)
		}
	}
	return hi
}

func (s source) between(lo, hi int64) int64 { return lo + int64(s.below(uint64(hi-lo)+1)) }

// unit returns a uniform draw from [0, 1) with 53 bits.
func (s source) unit() float64 { return float64(s.pcg.Uint64()>>11) / (1 << 53) }

// zipf draws ranks 0..n-1 with P(k) proportional to 1/(k+1)^s, by binary
// search in the cumulative weights (exact and the same on every platform,
// unlike a rejection sampler's float path).
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for k := range n {
		sum += 1 / math.Pow(float64(k+1), s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	return zipf{cdf: cdf}
}

func (z zipf) draw(src source) int {
	u := src.unit()
	k, _ := slices.BinarySearch(z.cdf, u)
	return min(k, len(z.cdf)-1)
}

// Generate builds the workload p describes.
func Generate(p Params) (*Workload, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	src := source{pcg: rand.NewPCG(p.Seed, 0x616c6c6f742d6374)} // "allot-ct"
	w := &Workload{Params: p}
	var groups []inventory.GroupKey
	var z zipf
	switch p.Preset {
	case PresetHot:
		count := 50 + int64(p.Carts)/4
		for s := 1; s <= 5; s++ {
			g := inventory.GroupKey{SKU: "hot-" + strconv.Itoa(s), Condition: "new", Source: "own"}
			groups = append(groups, g)
			for wh := 1; wh <= 4; wh++ {
				w.Rows = append(w.Rows, inventory.Row{Key: g.Row("w" + strconv.Itoa(wh)), Count: count, Price: 1000 + int64(s)})
			}
		}
		z = newZipf(len(groups), 1)
	case PresetWide:
		groups = make([]inventory.GroupKey, 0, 10000)
		w.Rows = make([]inventory.Row, 0, 100000)
		for s := 1; s <= 10000; s++ {
			g := inventory.GroupKey{SKU: fmt.Sprintf("sku-%05d", s), Condition: "new", Source: "own"}
			groups = append(groups, g)
			for wh := 1; wh <= 10; wh++ {
				w.Rows = append(w.Rows, inventory.Row{Key: g.Row(fmt.Sprintf("w%02d", wh)), Count: src.between(0, 20), Price: src.between(400, 1500)})
			}
		}
		z = newZipf(len(groups), 1.1)
	}
	w.Carts = make([]Cart, p.Carts)
	for i := range w.Carts {
		c := &w.Carts[i]
		n := p.Lines
		if n == 0 {
			n = int(src.between(1, LinesMax))
		}
		c.Lines = make([]store.CartLine, n)
		for j := range c.Lines {
			c.Lines[j] = store.CartLine{Group: groups[z.draw(src)], N: src.between(1, QuantityLineMax)}
		}
		switch u := src.unit(); {
		case u < p.ConfirmShare:
			c.Fate = FateConfirm
		case u < p.ConfirmShare+p.CancelShare:
			c.Fate = FateCancel
		default:
			c.Fate = FateAbandon
		}
		c.ResendHold = src.unit() < p.ResendShare
		c.ResendFinish = src.unit() < p.ResendShare
	}
	return w, nil
}
