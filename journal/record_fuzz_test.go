package journal

import (
	"reflect"
	"slices"
	"testing"

	"allot/inventory"
)

// FuzzDecodeFrame feeds arbitrary bytes to the frame parser and op decoder:
// they must never panic and never accept an op that breaks the input rules
// without the state machine rejecting it. Frames that parse must decode to
// ops that re-encode to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	ops := genOps(11, 30)
	frame := make([]byte, frameHeaderSize)
	for i := range ops {
		frame = inventory.AppendOp(frame, &ops[i])
	}
	putFrameHeader(frame, 1, uint32(len(ops)), 1700000000000)
	f.Add(frame)
	f.Add(frame[:len(frame)-3])
	// A frame of every contract v2 kind, with keys.
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "supplier"}
	v2 := []inventory.Op{
		inventory.Stock(g.Row("w1"), 10, 1),
		inventory.Hold("h1", 1000, []inventory.Demand{{Group: g, N: 2}, {Group: g, N: 1}}),
		inventory.Confirm("h1"),
		inventory.Hold("h2", 5, []inventory.Demand{{Group: g, N: 1}}),
		inventory.Cancel("h2"),
		inventory.Order([]inventory.Demand{{Group: g, N: 1}}),
	}
	v2[5].IdempotencyKey = "order-1"
	c := inventory.Capture(g, 1)
	c.IdempotencyKey = "cap-1"
	v2 = append(v2, c)
	frame2 := make([]byte, frameHeaderSize)
	for i := range v2 {
		frame2 = inventory.AppendOp(frame2, &v2[i])
	}
	putFrameHeader(frame2, 1, uint32(len(v2)), 1700000000000)
	f.Add(frame2)
	f.Add([]byte{})
	f.Add(make([]byte, frameHeaderSize))
	f.Fuzz(func(t *testing.T, buf []byte) {
		findValidFrame(buf)
		h, size, bad, _ := parseFrame(buf)
		payload := buf
		if bad == "" {
			payload = buf[h.headerSize:size]
		}
		d := inventory.NewDecoder()
		d.Reset(payload)
		st := inventory.NewState()
		st.SetTime(h.stamp)
		for k := 0; bad != "" || k < int(h.count); k++ {
			var op inventory.Op
			if err := d.Op(&op); err != nil {
				return
			}
			// Whatever decodes must re-encode to bytes that decode to the
			// same op (version 1 ops re-encode in the current version).
			re := inventory.NewDecoder()
			re.Reset(inventory.AppendOp(nil, &op))
			var op2 inventory.Op
			if err := re.Op(&op2); err != nil || !reflect.DeepEqual(op2, op) || !re.Done() {
				t.Fatalf("op %+v does not round-trip: %+v, %v", op, op2, err)
			}
			st.Apply(&op, nil)
			if d.Pos() >= len(payload) {
				break
			}
		}
		if err := st.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzDecodeSnapshot: arbitrary bytes must be rejected cleanly or load.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(&Snapshot{LSN: 7, Rows: stateAfter(genOps(12, 50))}))
	f.Add(encodeSnapshot(&Snapshot{LSN: 9, Rows: checkoutState().Rows(), Sections: checkoutState().Sections()}))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, buf []byte) {
		lsn, st, err := decodeSnapshot("fuzz", buf, inventory.NewDecoder())
		// SnapshotLSN checks only the envelope: it accepts whatever decodes,
		// with the same LSN.
		if at, lerr := SnapshotLSN("fuzz", buf); err == nil && (lerr != nil || at != lsn) {
			t.Fatalf("SnapshotLSN = %d, %v on a snapshot that decodes at %d", at, lerr, lsn)
		}
		if err != nil {
			return
		}
		if err := st.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		if got := encodeSnapshot(&Snapshot{LSN: lsn, Rows: st.Rows(), Sections: st.Sections()}); !slices.Equal(got, buf) {
			// Only canonical encodings of sorted rows re-encode identically;
			// reloading the re-encoding must give the same state.
			_, st2, err := decodeSnapshot("fuzz", got, inventory.NewDecoder())
			if err != nil || !slices.Equal(st2.Rows(), st.Rows()) || !reflect.DeepEqual(st2.Sections(), st.Sections()) {
				t.Fatalf("snapshot does not round-trip: %v", err)
			}
		}
	})
}

// checkoutState is a state with holds in every state and idempotency keys.
func checkoutState() *inventory.State {
	st := inventory.NewState()
	st.SetTime(1_700_000_000_000)
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "supplier"}
	for _, w := range []string{"w1", "w2"} {
		op := inventory.Stock(g.Row(w), 10, 100)
		st.Apply(&op, nil)
	}
	for i, id := range []string{"h1", "h2", "h3", "h4"} {
		op := inventory.Hold(id, int64(1000*(i+1)), []inventory.Demand{{Group: g, N: 2}})
		st.Apply(&op, nil)
	}
	for _, op := range []inventory.Op{inventory.Confirm("h1"), inventory.Cancel("h2")} {
		st.Apply(&op, nil)
	}
	st.SetTime(1_700_000_003_500)
	exp := inventory.Expire("h3")
	st.Apply(&exp, nil)
	c := inventory.Capture(g, 1)
	c.IdempotencyKey = "k1"
	st.Apply(&c, nil)
	return st
}
