package inventory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// dumpAudit16 prints every field of the state an op may change: rows,
// group totals and SKU links, holds, the live part of the expiry heap,
// the finished list, the hold log, the key table and the counters that
// are not metrics of refusals (Repeats, Mismatches).
func dumpAudit16(s *State) string {
	out := fmt.Sprintf("now %d ret %d rows %v\n", s.now, s.retention, s.Rows())
	gks := make([]GroupKey, 0, len(s.groups))
	for k := range s.groups {
		gks = append(gks, k)
	}
	slices.SortFunc(gks, func(a, b GroupKey) int { return CompareRowKeys(a.Row(""), b.Row("")) })
	for _, k := range gks {
		g := s.groups[k]
		out += fmt.Sprintf("group %v %d:%d rows %d\n", k, g.totalHi, g.totalLo, len(g.rows))
	}
	skus := make([]string, 0, len(s.skus))
	for sku := range s.skus {
		skus = append(skus, sku)
	}
	slices.Sort(skus)
	for _, sku := range skus {
		n := 0
		for g := s.skus[sku]; g != nil; g = g.nextInSKU {
			n++
		}
		out += fmt.Sprintf("sku %s groups %d\n", sku, n)
	}
	ids := make([]string, 0, len(s.holds))
	for id := range s.holds {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		h := s.holds[id]
		if s.liveHold(id) == nil {
			out += fmt.Sprintf("gone %s %v\n", id, h.state)
			continue
		}
		out += fmt.Sprintf("hold %s %v %d %d %x %d\n", id, h.state, h.expiresAt, h.finishedAt, h.fingerprint, len(h.alloc))
	}
	var live []string
	for _, d := range s.deadlines {
		if d.h.state == HoldHeld && s.holds[d.h.id] == d.h {
			live = append(live, fmt.Sprint(d.at, d.h.id))
		}
	}
	slices.Sort(live)
	out += fmt.Sprintf("due %v finished %d log %d dead %d\n", live, len(s.finished), s.holdsN, s.holdsDead)
	st := s.stats
	st.Repeats, st.Mismatches = 0, 0
	out += fmt.Sprintf("stats %+v keys %d %x\n", st, s.keys.len(), s.AppendKeys(nil))
	return out
}

// liveKeysAudit16 lists the key entries within the window at the state's
// time, oldest first.
func liveKeysAudit16(s *State) []string {
	var out []string
	b := s.AppendKeys(nil)
	for off := 0; off < len(b); {
		e := parseKeyEntry(b[off:])
		if e.stamp+s.retention > s.now {
			out = append(out, fmt.Sprintf("%s@%d:%x:%x", e.key, e.stamp, e.fingerprint, e.reply))
		}
		off += e.size
	}
	slices.Sort(out)
	return out
}

// FuzzCheckoutAudit16 drives the state machine and the reference model
// (checkout_model_test.go) with ops read from the input, including counts
// at CountMax, equal deadlines, time steps landing exactly on the
// retention edge and snapshot restores in the middle. It checks every
// reply against the model, that an op that changed nothing left every
// field of state as it was, the invariants, that holds come due in
// (deadline, id) order, and at the end that replaying the journaled ops
// gives the same state.
func FuzzCheckoutAudit16(f *testing.F) {
	f.Add([]byte{0, 0, 5, 3, 1, 2, 10, 1, 4, 1, 8, 3, 9, 5, 1, 8, 3})
	f.Add([]byte{0, 1, 255, 0, 3, 0, 1, 1, 2, 3, 1, 0, 5, 0, 8, 2, 9, 3, 1, 2, 7, 8, 4, 8, 5})
	f.Add([]byte{0, 0, 1, 3, 2, 1, 0, 1, 3, 3, 1, 0, 2, 3, 1, 3, 1, 0, 1, 9, 8, 0, 8, 1, 4, 2})
	f.Fuzz(runAudit16)
}

func runAudit16(t *testing.T, data []byte) {
	{
		const retention = 100
		pos := 0
		next := func() int {
			if pos >= len(data) {
				return 0
			}
			pos++
			return int(data[pos-1])
		}
		s, m := NewState(), newCheckoutModel(retention)
		s.SetRetention(retention)
		s.SetTime(1000)
		m.now = 1000
		type journaled struct {
			stamp int64
			op    Op
		}
		var log []journaled
		group := func(b int) GroupKey { return GroupKey{SKU: string(rune('a' + b%2)), Condition: "c", Source: "o"} }
		row := func(b int) RowKey { return group(b).Row(fmt.Sprint("w", (b/2)%3)) }
		count := func(b int) int64 {
			if b >= 250 {
				return CountMax - int64(255-b)
			}
			return int64(b % 8)
		}
		demand := func() []Demand {
			n := 1 + next()%3
			ls := make([]Demand, n)
			for i := range ls {
				b := next()
				ls[i] = Demand{Group: group(b), N: 1 + int64(b/2%4)}
				if b >= 250 {
					ls[i].N = QuantityMax
				}
			}
			return ls
		}
		apply := func(op Op, check bool) {
			before := dumpAudit16(s)
			enc := []byte(nil)
			if op.Kind.Mutates() && op.Check() == "" {
				enc = AppendOp(nil, &op)
			}
			got := s.Apply(&op, nil)
			if check {
				want := m.apply(op)
				if g, w := normalize(got), normalize(want); !reflect.DeepEqual(g, w) {
					t.Fatalf("%s %+v:\n got %+v\nwant %+v", op.Kind, op, g, w)
				}
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatalf("%s: %v", op.Kind, err)
			}
			if !got.Changed {
				if after := dumpAudit16(s); after != before {
					t.Fatalf("%s %+v answered %+v without a change, but state moved:\n%s\n->\n%s", op.Kind, op, got, before, after)
				}
				return
			}
			d := NewDecoder()
			d.Reset(enc)
			var back Op
			if err := d.Op(&back); err != nil || !d.Done() {
				t.Fatalf("%s does not decode: %v", op.Kind, err)
			}
			back.Lines = slices.Clone(back.Lines)
			log = append(log, journaled{s.Now(), back})
		}
		holdID := func() string { return fmt.Sprint("h", (next()<<8|next())%audit16Holds) }
		for steps := 0; pos < len(data) && steps < audit16Steps; steps++ {
			var op Op
			switch next() % 10 {
			case 0:
				op = Stock(row(next()), count(next()), 1)
			case 1:
				b := next()
				op = Release(row(next()), 1+int64(b%3))
				if b >= 250 {
					op.N = QuantityMax
				}
			case 2:
				b := next()
				op = Capture(group(b), 1+int64(b/2%5))
			case 3:
				// TTLs that are multiples of 10 give equal deadlines.
				op = Hold(holdID(), int64(10*(1+next()%12)), demand())
			case 4:
				op = Confirm(holdID())
			case 5:
				op = Cancel(holdID())
			case 6:
				op = Order(demand())
			case 7:
				op = HoldGet(holdID())
			case 8:
				dt := []int64{0, 1, 10, 30, retention - 1, retention, retention + 1, 7}[next()%8]
				s.SetTime(s.Now() + dt)
				m.now += dt
				var ids []string
				for {
					id, ok := s.NextDue()
					if !ok {
						break
					}
					apply(Expire(id), false)
					ids = append(ids, id)
				}
				type due struct {
					at int64
					id string
				}
				var want []due
				for id, h := range m.holds {
					if h.state == HoldHeld && h.expiresAt <= m.now {
						want = append(want, due{h.expiresAt, id})
					}
				}
				slices.SortFunc(want, func(a, b due) int {
					if a.at != b.at {
						return int(a.at - b.at)
					}
					return cmpString(a.id, b.id)
				})
				m.expireDue()
				if len(ids) != len(want) {
					t.Fatalf("expired %v, model %v", ids, want)
				}
				for i := range ids {
					if ids[i] != want[i].id {
						t.Fatalf("expired %v, model due order %v", ids, want)
					}
				}
				if next()%2 == 0 {
					s.Collect()
				}
				continue
			case 9:
				if next()%audit16RestoreOdds != 0 {
					continue
				}
				if next()%2 == 0 {
					s = restoreAudit16(t, s)
					continue
				}
				// Through a frozen view, while the writer goes on: the
				// restored state is the state at the cut, so the model
				// is cloned there and the ops after it are dropped from
				// both.
				dump, keys := dumpAudit16(s), liveKeysAudit16(s)
				var c *State
				c = restoreFrozenAudit16(t, s, func() {
					k := 0
					for range next() % 6 {
						id := fmt.Sprint("h", k%4)
						k++
						for _, op := range []Op{Cancel(id), Stock(row(next()), count(next()), 2), Hold(id, 20, demand()), Confirm(id)} {
							if s.HoldDue(op.Hold) && op.Hold != "" {
								continue
							}
							s.Apply(&op, nil)
						}
						s.SetTime(s.Now() + int64(next()%3))
						s.Collect()
					}
				})
				// The restored state's holds, keys and rows are the cut's.
				d := dumpAudit16(c)
				if a, b := cutAudit16(d), cutAudit16(dump); a != b {
					t.Fatalf("frozen restore differs from the cut:\n%s\n%s", a, b)
				}
				if a := liveKeysAudit16(c); !slices.Equal(a, keys) {
					t.Fatalf("frozen restore keys %v, at the cut %v", a, keys)
				}
				s = c
				continue
			}
			if op.Kind.Keyed() && next()%3 == 0 {
				op.IdempotencyKey = fmt.Sprint("k", next()%3)
			}
			if (op.Kind == KindConfirm || op.Kind == KindCancel) && s.HoldDue(op.Hold) {
				// What the engine's writer does first; the model
				// expires on the way, with the same outcome.
				h := m.holds[op.Hold]
				apply(Expire(op.Hold), false)
				m.finish(h, HoldExpired)
			}
			apply(op, true)
			for _, r := range s.Rows() {
				if mr := m.rows[r.Key]; mr != [2]int64{r.Count, r.Price} {
					t.Fatalf("row %v: state %d, model %v", r.Key, r.Count, mr)
				}
			}
		}
		// Replay of the journaled ops under ReplayRetentionMS gives the
		// same state.
		r := NewState()
		r.SetRetention(ReplayRetentionMS)
		for i, j := range log {
			r.SetTime(j.stamp)
			if res := r.Apply(&j.op, nil); !res.Changed {
				t.Fatalf("journaled op %d (%v) does not replay: %+v", i, j.op.Kind, res)
			}
		}
		r.SetRetention(retention)
		r.SetTime(s.Now())
		if !slices.Equal(r.Rows(), s.Rows()) {
			t.Fatalf("replayed rows differ:\n%v\n%v", r.Rows(), s.Rows())
		}
		if a, b := r.AppendHolds(nil), s.AppendHolds(nil); !slices.Equal(a, b) {
			t.Fatalf("replayed holds differ")
		}
		if a, b := liveKeysAudit16(r), liveKeysAudit16(s); !slices.Equal(a, b) {
			t.Fatalf("replayed keys differ:\n%v\n%v", a, b)
		}
		if a, b := dueOrder(t, r.Clone()), dueOrder(t, s.Clone()); !slices.Equal(a, b) {
			t.Fatalf("replayed due order %v, live %v", a, b)
		}
	}
}

// cutAudit16 keeps the lines of a dump that a snapshot restores exactly:
// rows, groups, holds and live keys (not the counters, the hold log or the
// finished list, which a restore rebuilds).
func cutAudit16(d string) string {
	out := ""
	for _, l := range strings.Split(d, "\n") {
		if strings.HasPrefix(l, "now ") || strings.HasPrefix(l, "group ") || strings.HasPrefix(l, "hold ") || strings.HasPrefix(l, "due ") {
			if i := strings.Index(l, " finished "); i >= 0 {
				l = l[:i]
			}
			out += l + "\n"
		}
	}
	return out
}

// The fuzz target's hold ids and steps; TestCheckoutLongRunAudit16 raises
// them to reach the hold log's compaction and key chunk collection.
var audit16Holds, audit16Steps, audit16RestoreOdds = 4, 400, 1

// TestCheckoutLongRunAudit16 runs the fuzz target's checks on long random
// inputs with many hold ids, so that finished holds are collected, the
// hold log compacts and snapshots restore across both.
func TestCheckoutLongRunAudit16(t *testing.T) {
	defer func(h, s, r int) { audit16Holds, audit16Steps, audit16RestoreOdds = h, s, r }(audit16Holds, audit16Steps, audit16RestoreOdds)
	audit16Holds, audit16Steps, audit16RestoreOdds = 300, 30000, 200
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 16))
		data := make([]byte, 300000)
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		runAudit16(t, data)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
