package workload

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"

	"allot/inventory"
)

// Op is one op of a workload: a capture of N units of a group, or a release
// of N units to a row.
type Op struct {
	// Kind is inventory.KindCapture or inventory.KindRelease.
	Kind inventory.Kind
	// Key is the row of a release; for a capture it names the group and
	// Key.Warehouse is empty.
	Key inventory.RowKey
	N   int64
}

// Group returns the group the op touches.
func (o *Op) Group() inventory.GroupKey { return o.Key.Group() }

// InventoryOp returns the op as the state machine takes it.
func (o *Op) InventoryOp() inventory.Op {
	if o.Kind == inventory.KindCapture {
		return inventory.Capture(o.Key.Group(), o.N)
	}
	return inventory.Release(o.Key, o.N)
}

// Workload is what the bench replays: rows to load, then ops in order.
type Workload struct {
	Params Params
	// Initial holds the rows to load before the ops, in generation order;
	// their keys are distinct.
	Initial []inventory.Row
	Ops     []Op
}

// source is the generator's randomness: a PCG (a stable, specified
// algorithm) and bounded draws written out here, because math/rand/v2 does
// not promise that its helpers (IntN and friends) keep their output across
// Go releases, and the op files must not change when Go does.
type source struct{ pcg *rand.PCG }

func newSource(seed uint64) source {
	// The second word is a fixed stream selector ("allot-ws"), so that the
	// same seed used elsewhere does not give the same stream.
	return source{pcg: rand.NewPCG(seed, 0x616c6c6f742d7773)}
}

// below returns a uniform draw from [0, n), n > 0, by Lemire's
// multiply-and-reject method: unbiased, one multiplication in the common
// case.
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

// between returns a uniform draw from [lo, hi], lo <= hi.
func (s source) between(lo, hi int64) int64 {
	return lo + int64(s.below(uint64(hi-lo)+1))
}

// ids builds and shares identifier strings, so that rows of one SKU hold
// one string and a million ops hold no copies.
type ids struct {
	skuWidth   int
	skus       map[int]string
	warehouses []string
}

func newIDs(p *Params) *ids {
	w := &ids{skuWidth: max(6, len(strconv.Itoa(p.SKUs))), skus: make(map[int]string)}
	width := len(strconv.Itoa(p.Warehouses))
	for i := 1; i <= p.Warehouses; i++ {
		w.warehouses = append(w.warehouses, fmt.Sprintf("w%0*d", width, i))
	}
	return w
}

// sku returns the id of SKU number i (1-based): "sku-000123".
func (w *ids) sku(i int) string {
	s, ok := w.skus[i]
	if !ok {
		s = fmt.Sprintf("sku-%0*d", w.skuWidth, i)
		w.skus[i] = s
	}
	return s
}

// Generate builds the workload of p. It validates p first.
func Generate(p Params) (*Workload, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	src := newSource(p.Seed)
	names := newIDs(&p)
	w := &Workload{Params: p, Initial: make([]inventory.Row, 0, p.Rows), Ops: make([]Op, 0, p.Ops)}

	// Rows: draw a key uniformly, redraw on a duplicate, as the original
	// does; then the price and the count.
	type dims struct{ sku, warehouse, condition, source int }
	taken := make(map[dims]struct{}, p.Rows)
	for len(w.Initial) < p.Rows {
		d := dims{
			sku:       int(src.between(1, int64(p.SKUs))),
			warehouse: int(src.between(1, int64(p.Warehouses))),
			condition: int(src.between(1, int64(p.Conditions))),
			source:    int(src.between(1, int64(p.Sources))),
		}
		if _, dup := taken[d]; dup {
			continue
		}
		taken[d] = struct{}{}
		price := src.between(PriceMin, PriceMax)
		count := src.between(0, InitialCountMax)
		w.Initial = append(w.Initial, inventory.Row{
			Key: inventory.RowKey{
				SKU:       names.sku(d.sku),
				Warehouse: names.warehouses[d.warehouse-1],
				Condition: conditionNames[d.condition-1],
				Source:    sourceNames[d.source-1],
			},
			Count: count,
			Price: price,
		})
	}

	// Ops, against a simulated state kept per row. positive lists the rows
	// whose simulated count is above zero, so that a capture picks among
	// them uniformly in O(1): the same distribution as the original's
	// "pick a random row until its count is above zero", without its
	// unbounded loop.
	counts := make([]int64, p.Rows)
	positive := make([]int32, 0, p.Rows)
	slot := make([]int32, p.Rows) // index in positive, or -1
	for i, r := range w.Initial {
		counts[i] = r.Count
		slot[i] = -1
		if r.Count > 0 {
			slot[i] = int32(len(positive))
			positive = append(positive, int32(i))
		}
	}
	for len(w.Ops) < p.Ops {
		capture := src.pcg.Uint64() < captureThreshold
		// With no stock anywhere a capture cannot succeed; the original
		// would loop forever here. A release is drawn instead.
		if capture && len(positive) > 0 {
			i := positive[src.below(uint64(len(positive)))]
			n := src.between(1, min(QuantityOpMax, counts[i]))
			counts[i] -= n
			if counts[i] == 0 {
				last := positive[len(positive)-1]
				positive[slot[i]] = last
				slot[last] = slot[i]
				positive = positive[:len(positive)-1]
				slot[i] = -1
			}
			k := w.Initial[i].Key
			k.Warehouse = ""
			w.Ops = append(w.Ops, Op{Kind: inventory.KindCapture, Key: k, N: n})
			continue
		}
		i := int32(src.below(uint64(p.Rows)))
		n := src.between(1, QuantityOpMax)
		counts[i] += n
		if slot[i] < 0 {
			slot[i] = int32(len(positive))
			positive = append(positive, i)
		}
		w.Ops = append(w.Ops, Op{Kind: inventory.KindRelease, Key: w.Initial[i].Key, N: n})
	}
	return w, nil
}
