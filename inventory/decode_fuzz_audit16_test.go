package inventory

import "testing"

// FuzzDecodeAudit16: decoding a journaled op or loading a snapshot
// section from any bytes returns an error or a value, never panics; a
// decoded op that is applied keeps the invariants; a state that loaded
// sections keeps them or CheckInvariants says what broke, without
// panicking.
func FuzzDecodeAudit16(f *testing.F) {
	s := NewState()
	s.SetTime(1000)
	s.Apply(ptr(Stock(rk("a", "w1"), 5, 1)), nil)
	s.Apply(ptr(Hold("h", 100, []Demand{{gk("a"), 2}})), nil)
	op := Capture(gk("a"), 1)
	op.IdempotencyKey = "k"
	s.Apply(&op, nil)
	for _, sec := range s.Sections() {
		f.Add(sec.Tag, sec.Bytes)
	}
	f.Add(byte(0), AppendOp(nil, ptr(Hold("h2", 5, []Demand{{gk("a"), 1}, {gk("b"), 2}}))))
	f.Add(byte(0), AppendOp(nil, &op))
	f.Fuzz(func(t *testing.T, tag byte, b []byte) {
		st := NewState()
		st.SetTime(1000)
		st.Apply(ptr(Stock(rk("a", "w1"), 5, 1)), nil)
		if tag == 0 || tag == 1 {
			d := NewDecoder()
			d.Version = 1 + int(tag)
			d.Reset(b)
			var op Op
			for !d.Done() {
				if err := d.Op(&op); err != nil {
					return
				}
				st.Apply(&op, nil)
				if err := st.CheckInvariants(); err != nil {
					t.Fatalf("after %v: %v", op.Kind, err)
				}
			}
			return
		}
		if err := st.LoadSection(Section{Tag: tag, Bytes: b}); err != nil {
			return
		}
		_ = st.CheckInvariants()
		st.SetTime(5000)
		for {
			id, ok := st.NextDue()
			if !ok {
				break
			}
			if r := st.Apply(ptr(Expire(id)), nil); !r.Changed {
				t.Fatalf("expire %s: %+v", id, r)
			}
		}
		st.Sections()
	})
}
