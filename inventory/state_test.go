package inventory

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func rk(sku, w string) RowKey { return RowKey{SKU: sku, Warehouse: w, Condition: "new", Source: "s1"} }
func gk(sku string) GroupKey  { return GroupKey{SKU: sku, Condition: "new", Source: "s1"} }

func TestApply(t *testing.T) {
	type step struct {
		op   Op
		want Result
	}
	long := strings.Repeat("x", 65)
	tests := []struct {
		name  string
		steps []step
		rows  []Row // final rows, ordered by key
	}{
		{
			name: "capture walks warehouses in byte order and takes min(count, remaining)",
			steps: []step{
				{Stock(rk("a", "w2"), 5, 100), Result{Count: 5, Price: 100}},
				{Stock(rk("a", "w1"), 2, 100), Result{Count: 2, Price: 100}},
				{Stock(rk("a", "W9"), 1, 100), Result{Count: 1, Price: 100}}, // 'W' < 'w'
				{Capture(gk("a"), 4), Result{Lines: []Line{{"W9", 1}, {"w1", 2}, {"w2", 1}}}},
			},
			rows: []Row{{rk("a", "W9"), 0, 100}, {rk("a", "w1"), 0, 100}, {rk("a", "w2"), 4, 100}},
		},
		{
			name: "capture skips empty warehouses",
			steps: []step{
				{Stock(rk("a", "w1"), 0, 1), Result{Count: 0, Price: 1}},
				{Stock(rk("a", "w2"), 3, 1), Result{Count: 3, Price: 1}},
				{Capture(gk("a"), 3), Result{Lines: []Line{{"w2", 3}}}},
			},
			rows: []Row{{rk("a", "w1"), 0, 1}, {rk("a", "w2"), 0, 1}},
		},
		{
			name: "insufficient changes nothing and reports the total",
			steps: []step{
				{Stock(rk("a", "w1"), 2, 1), Result{Count: 2, Price: 1}},
				{Stock(rk("a", "w2"), 1, 1), Result{Count: 1, Price: 1}},
				{Capture(gk("a"), 4), Result{Code: CodeInsufficient, Available: 3}},
				{Capture(gk("zzz"), 1), Result{Code: CodeInsufficient}},
			},
			rows: []Row{{rk("a", "w1"), 2, 1}, {rk("a", "w2"), 1, 1}},
		},
		{
			name: "release adds to the row, unknown row is not found",
			steps: []step{
				{Stock(rk("a", "w1"), 2, 1), Result{Count: 2, Price: 1}},
				{Release(rk("a", "w1"), 3), Result{Count: 5}},
				{Release(rk("a", "w3"), 3), Result{Code: CodeNotFound}},
				{Get(rk("a", "w1")), Result{Count: 5, Price: 1}},
				{Get(rk("a", "w3")), Result{Code: CodeNotFound}},
				{Available(gk("a")), Result{Count: 5}},
				{Available(gk("b")), Result{Count: 0}},
			},
			rows: []Row{{rk("a", "w1"), 5, 1}},
		},
		{
			name: "release past CountMax is rejected unchanged",
			steps: []step{
				{Stock(rk("a", "w1"), CountMax-1, 1), Result{Count: CountMax - 1, Price: 1}},
				{Release(rk("a", "w1"), 2), Result{Code: CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}},
				{Release(rk("a", "w1"), 1), Result{Count: CountMax}},
			},
			rows: []Row{{rk("a", "w1"), CountMax, 1}},
		},
		{
			name: "group totals past int64 saturate and still capture",
			steps: []step{
				{Stock(rk("a", "w1"), CountMax, 1), Result{Count: CountMax, Price: 1}},
				{Stock(rk("a", "w2"), CountMax, 1), Result{Count: CountMax, Price: 1}},
				{Stock(rk("a", "w3"), CountMax, 1), Result{Count: CountMax, Price: 1}},
				{Available(gk("a")), Result{Count: math.MaxInt64}},
				{Capture(gk("a"), QuantityMax), Result{Lines: []Line{{"w1", QuantityMax}}}},
			},
			rows: []Row{{rk("a", "w1"), CountMax - QuantityMax, 1}, {rk("a", "w2"), CountMax, 1}, {rk("a", "w3"), CountMax, 1}},
		},
		{
			name: "bad input is invalid and changes nothing",
			steps: []step{
				{Stock(rk("a", "w1"), 2, 1), Result{Count: 2, Price: 1}},
				{Capture(gk("a"), 0), Result{Code: CodeInvalid, Detail: "quantity must be an integer from 1 to 2147483647"}},
				{Capture(gk("a"), -1), Result{Code: CodeInvalid, Detail: "quantity must be an integer from 1 to 2147483647"}},
				{Capture(gk("a"), QuantityMax+1), Result{Code: CodeInvalid, Detail: "quantity must be an integer from 1 to 2147483647"}},
				{Capture(GroupKey{"", "new", "s1"}, 1), Result{Code: CodeInvalid, Detail: "sku is empty"}},
				{Capture(GroupKey{long, "new", "s1"}, 1), Result{Code: CodeInvalid, Detail: "sku is longer than 64 bytes"}},
				{Release(RowKey{"a", "w\n1", "new", "s1"}, 1), Result{Code: CodeInvalid, Detail: "warehouse contains a control character"}},
				{Release(RowKey{"a", "w1", "\xff", "s1"}, 1), Result{Code: CodeInvalid, Detail: "condition is not valid UTF-8"}},
				{Release(RowKey{"a", "w1", "new", "s\u0085"}, 1), Result{Code: CodeInvalid, Detail: "source contains a control character"}},
				{Stock(rk("a", "w1"), -1, 1), Result{Code: CodeInvalid, Detail: "count must be an integer from 0 to 4611686018427387903"}},
				{Stock(rk("a", "w1"), 1, CountMax+1), Result{Code: CodeInvalid, Detail: "price must be an integer from 0 to 4611686018427387903"}},
				{Op{Kind: 99, Key: rk("a", "w1")}, Result{Code: CodeInvalid, Detail: "unknown op kind"}},
			},
			rows: []Row{{rk("a", "w1"), 2, 1}},
		},
		{
			name: "ids may be any UTF-8 without control characters, 64 bytes at most",
			steps: []step{
				{Stock(RowKey{strings.Repeat("é", 32), "склад 1", "new", "a b"}, 1, 1), Result{Count: 1, Price: 1}},
				{Capture(GroupKey{strings.Repeat("é", 32), "new", "a b"}, 1), Result{Lines: []Line{{"склад 1", 1}}}},
			},
			rows: []Row{{RowKey{strings.Repeat("é", 32), "склад 1", "new", "a b"}, 0, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			for i, st := range tt.steps {
				got := s.Apply(&st.op, nil)
				if len(got.Lines) == 0 {
					got.Lines = nil
				}
				if !resultsEqual(got, st.want) {
					t.Fatalf("step %d %s %v: got %+v, want %+v", i, st.op.Kind, st.op.Key, got, st.want)
				}
				if err := s.CheckInvariants(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if got := s.Rows(); !slices.Equal(got, tt.rows) {
				t.Fatalf("rows:\n got %+v\nwant %+v", got, tt.rows)
			}
		})
	}
}

func resultsEqual(a, b Result) bool {
	return a.Code == b.Code && slices.Equal(a.Lines, b.Lines) && a.Count == b.Count &&
		a.Price == b.Price && a.Available == b.Available && a.Detail == b.Detail
}

// model is the dumb reference: a map of counts, and a capture that sorts
// the group's warehouses every time.
type model struct{ rows map[RowKey][2]int64 }

func (m *model) apply(op Op) Result {
	if d := op.Check(); d != "" {
		return Result{Code: CodeInvalid, Detail: d}
	}
	switch op.Kind {
	case KindStock:
		m.rows[op.Key] = [2]int64{op.N, op.Price}
		return Result{Count: op.N, Price: op.Price}
	case KindRelease:
		r, ok := m.rows[op.Key]
		if !ok {
			return Result{Code: CodeNotFound}
		}
		if r[0]+op.N > CountMax {
			return Result{Code: CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}
		}
		r[0] += op.N
		m.rows[op.Key] = r
		return Result{Count: r[0]}
	case KindCapture:
		var ws []string
		var total int64
		for k, r := range m.rows {
			if k.Group() == op.Key.Group() {
				ws = append(ws, k.Warehouse)
				total += r[0]
			}
		}
		if total < op.N {
			return Result{Code: CodeInsufficient, Available: total}
		}
		slices.Sort(ws)
		var lines []Line
		left := op.N
		for _, w := range ws {
			k := op.Key.Group().Row(w)
			r := m.rows[k]
			take := min(r[0], left)
			if take > 0 {
				r[0] -= take
				m.rows[k] = r
				lines = append(lines, Line{w, take})
				left -= take
			}
		}
		return Result{Lines: lines}
	}
	panic("model: unexpected kind")
}

// TestAgainstModel drives the state machine and the reference model with
// the same random ops and compares every result and the final rows.
func TestAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		s, m := NewState(), &model{rows: map[RowKey][2]int64{}}
		skus := []string{"a", "b", "c"}
		whs := []string{"w1", "w2", "w3", "W0", "x"}
		conds := []string{"new", "used"}
		var lines []Line
		for i := 0; i < 5000; i++ {
			k := RowKey{skus[rng.IntN(3)], whs[rng.IntN(5)], conds[rng.IntN(2)], "s"}
			var op Op
			switch rng.IntN(10) {
			case 0:
				op = Stock(k, rng.Int64N(10), rng.Int64N(1000))
			case 1, 2, 3:
				op = Release(k, rng.Int64N(4)) // 0 is invalid on purpose
			default:
				op = Capture(k.Group(), rng.Int64N(8))
			}
			got, want := s.Apply(&op, lines), m.apply(op)
			want.Changed = want.Code == CodeOK && op.Kind.Mutates()
			lines = got.Lines
			if len(got.Lines) == 0 {
				got.Lines = nil
			}
			if !resultsEqual(got, want) {
				t.Fatalf("seed %d op %d %s %v n=%d: got %+v, model %+v", seed, i, op.Kind, op.Key, op.N, got, want)
			}
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, r := range s.Rows() {
			if mr := m.rows[r.Key]; mr != [2]int64{r.Count, r.Price} {
				t.Fatalf("seed %d row %v: state %d/%d, model %v", seed, r.Key, r.Count, r.Price, mr)
			}
		}
		if s.Len() != len(m.rows) {
			t.Fatalf("seed %d: %d rows, model %d", seed, s.Len(), len(m.rows))
		}
	}
}

func TestRowsOfSKUAndClone(t *testing.T) {
	s := NewState()
	for _, k := range []RowKey{{"a", "w2", "new", "x"}, {"a", "w1", "used", "x"}, {"b", "w1", "new", "x"}, {"a", "w1", "new", "x"}} {
		op := Stock(k, 1, 2)
		s.Apply(&op, nil)
	}
	got := s.RowsOfSKU("a")
	want := []Row{{RowKey{"a", "w1", "new", "x"}, 1, 2}, {RowKey{"a", "w1", "used", "x"}, 1, 2}, {RowKey{"a", "w2", "new", "x"}, 1, 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("RowsOfSKU: got %v want %v", got, want)
	}
	c := s.Clone()
	op := Capture(GroupKey{"a", "new", "x"}, 2)
	if r := c.Apply(&op, nil); r.Code != CodeOK {
		t.Fatal(r)
	}
	if a := s.Available(GroupKey{"a", "new", "x"}); a != 2 {
		t.Fatalf("clone shares state with its original: available %d", a)
	}
}

// BenchmarkApply measures the state machine alone on a seed-like mix: 1000
// rows, captures of 1..3 units and releases of 1..3 units, half and half.
func BenchmarkApply(b *testing.B) {
	s := NewState()
	rng := rand.New(rand.NewPCG(1, 2))
	var keys []RowKey
	for sku := 0; sku < 112; sku++ {
		for _, w := range []string{"w1", "w2", "w3"} {
			for _, c := range []string{"c1", "c2", "c3"} {
				k := RowKey{"sku-" + strings.Repeat("0", 3) + string(rune('a'+sku%26)) + string(rune('a'+sku/26)), w, c, "s1"}
				keys = append(keys, k)
				op := Stock(k, 1<<40, 500)
				s.Apply(&op, nil)
			}
		}
	}
	ops := make([]Op, 4096)
	for i := range ops {
		k := keys[rng.IntN(len(keys))]
		if i%2 == 0 {
			ops[i] = Capture(k.Group(), 1+rng.Int64N(3))
		} else {
			ops[i] = Release(k, 1+rng.Int64N(3))
		}
	}
	lines := make([]Line, 0, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := s.Apply(&ops[i&4095], lines)
		if r.Code != CodeOK {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
