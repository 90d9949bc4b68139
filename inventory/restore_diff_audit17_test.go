package inventory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"allot/catalog"
)

// TestRestoredAndReplayedAgreeAudit17 drives a live state and a replica
// with the same ops of every kind (catalog and keyed ops included, which
// FuzzCheckoutAudit16 leaves out), the replica now and then rebuilt from
// the live state's snapshot or by replaying its journaled ops from the
// start under ReplayRetentionMS, and holds every reply of the two to each
// other. It also checks that every row an op changed was in Touched.
func TestRestoredAndReplayedAgreeAudit17(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		const ret = 300
		live := NewState()
		live.SetRetention(ret)
		live.SetTime(1000)
		rep := restoreAudit16(t, live)
		type jop struct {
			at int64
			op Op
		}
		var log []jop
		skus := []string{"a", "b", "c"}
		grp := func() GroupKey { return GroupKey{SKU: skus[rng.IntN(3)], Condition: "n", Source: "s"} }
		demand := func() []Demand {
			ls := make([]Demand, 1+rng.IntN(3))
			for i := range ls {
				ls[i] = Demand{grp(), 1 + int64(rng.IntN(4))}
			}
			return ls
		}
		both := func(op Op) {
			enc := []byte(nil)
			if op.Kind.Mutates() && op.Check() == "" {
				enc = AppendOp(nil, &op)
			}
			o2 := op
			if op.Record != nil {
				r := op.Record.Clone()
				o2.Record = &r
			}
			touched := live.Touched(&op, nil)
			before := live.Rows()
			a := live.Apply(&op, nil)
			after := map[RowKey]int64{}
			for _, r := range live.Rows() {
				after[r.Key] = r.Count
			}
			bm := map[RowKey]int64{}
			for _, r := range before {
				bm[r.Key] = r.Count
			}
			for k, c := range after {
				if old, ok := bm[k]; (!ok || old != c) && !slices.Contains(touched, k) {
					t.Fatalf("seed %d %v changed %v not in touched %v", seed, op.Kind, k, touched)
				}
			}
			b := rep.Apply(&o2, nil)
			na, nb := normalize(a), normalize(b)
			if len(na.Hits) == 0 {
				na.Hits = nil
			}
			if len(nb.Hits) == 0 {
				nb.Hits = nil
			}
			if !reflect.DeepEqual(na, nb) {
				t.Fatalf("seed %d %v %+v:\nlive %+v\nrep  %+v", seed, op.Kind, op, a, b)
			}
			if a.Changed {
				d := NewDecoder()
				d.Reset(enc)
				var back Op
				if err := d.Op(&back); err != nil {
					t.Fatal(err)
				}
				back.Lines = slices.Clone(back.Lines)
				log = append(log, jop{live.Now(), back})
			}
		}
		for step := 0; step < 3000; step++ {
			var op Op
			switch rng.IntN(14) {
			case 0:
				op = Stock(GroupKey{SKU: skus[rng.IntN(3)], Condition: "n", Source: "s"}.Row(fmt.Sprint("w", rng.IntN(3))), int64(rng.IntN(6)), 1)
			case 1:
				op = Release(grp().Row(fmt.Sprint("w", rng.IntN(3))), 1+int64(rng.IntN(3)))
			case 2:
				op = Capture(grp(), 1+int64(rng.IntN(4)))
			case 3:
				op = Hold(fmt.Sprint("h", rng.IntN(6)), 1+int64(rng.IntN(200)), demand())
			case 4:
				op = Confirm(fmt.Sprint("h", rng.IntN(6)))
			case 5:
				op = Cancel(fmt.Sprint("h", rng.IntN(6)))
			case 6:
				op = Order(demand())
			case 7:
				op = CatalogSet(catalog.Record{SKU: skus[rng.IntN(3)], Title: []string{"Apple", "apricot", "Banana"}[rng.IntN(3)], Brand: "B", Attributes: []catalog.Attribute{{Name: "x", Value: fmt.Sprint(rng.IntN(2))}}})
			case 8:
				op = CatalogDel(skus[rng.IntN(3)])
			case 9:
				op = Search(catalog.Query{Prefix: "a"})
			case 10:
				op = HoldGet(fmt.Sprint("h", rng.IntN(6)))
			case 11:
				dt := []int64{0, 1, 50, ret - 1, ret, ret + 1}[rng.IntN(6)]
				live.SetTime(live.Now() + dt)
				rep.SetTime(rep.Now() + dt)
				for {
					id, ok := live.NextDue()
					id2, ok2 := rep.NextDue()
					if id != id2 || ok != ok2 {
						t.Fatalf("due %s %v vs %s %v", id, ok, id2, ok2)
					}
					if !ok {
						break
					}
					both(Expire(id))
				}
				if rng.IntN(2) == 0 {
					live.Collect()
				}
				if rng.IntN(3) == 0 {
					live.CollectKeys()
				}
				continue
			case 12:
				if rng.IntN(4) == 0 {
					rep = restoreAudit16(t, live)
				} else if rng.IntN(4) == 0 {
					// replay from the start under retention 1
					r := NewState()
					r.SetRetention(ReplayRetentionMS)
					for i, j := range log {
						r.SetTime(j.at)
						if res := r.Apply(&j.op, nil); !res.Changed {
							t.Fatalf("seed %d journaled op %d (%v) does not replay: %+v", seed, i, j.op.Kind, res)
						}
					}
					r.SetRetention(ret)
					r.SetTime(live.Now())
					rep = r
				}
				continue
			case 13:
				op = Get(grp().Row(fmt.Sprint("w", rng.IntN(3))))
			}
			if op.Kind.Keyed() && rng.IntN(2) == 0 {
				op.IdempotencyKey = fmt.Sprint("k", rng.IntN(5))
			}
			if (op.Kind == KindConfirm || op.Kind == KindCancel) && live.HoldDue(op.Hold) {
				both(Expire(op.Hold))
			}
			both(op)
			if err := live.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if err := rep.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
