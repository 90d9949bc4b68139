package engine

import (
	"testing"

	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// With ManualFlush the caller decides where frames end: requests wait,
// unwritten, until Flush, which writes them as one frame.
func TestManualFlushDecidesFrames(t *testing.T) {
	fs := vfs.NewMem()
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityFsync, ManualFlush: true, TickInterval: -1})
	defer e.Close()
	submit := func(op inventory.Op) *Request {
		r := NewRequest()
		r.Op = op
		if err := e.Submit(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	batches := [][]inventory.Op{
		{inventory.Stock(rk("a", "w1"), 9, 1)},
		{inventory.Capture(gk("a"), 1), inventory.Capture(gk("a"), 2), inventory.Release(rk("a", "w1"), 1)},
	}
	for _, ops := range batches {
		var reqs []*Request
		for _, op := range ops {
			reqs = append(reqs, submit(op))
		}
		before := e.journal.Bytes()
		for _, r := range reqs {
			select {
			case <-r.done:
				t.Fatalf("%s answered before Flush", r.Op.Kind)
			default:
			}
		}
		if e.journal.Bytes() != before {
			t.Fatal("a frame was written before Flush")
		}
		if err := e.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if err := r.Wait(); err != nil || r.Result.Code != inventory.CodeOK {
				t.Fatalf("%s: %+v %v", r.Op.Kind, r.Result, err)
			}
		}
	}
	rd, err := journal.NewReader(fs, "/d", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for i, ops := range batches {
		f, ok, err := rd.Next(^uint64(0))
		if err != nil || !ok || f.Count != len(ops) {
			t.Fatalf("frame %d: %d ops (ok %v, %v), want the %d of Flush %d", i, f.Count, ok, err, len(ops), i)
		}
	}
	if err := (&Engine{}).Flush(); err == nil {
		t.Fatal("Flush without ManualFlush did not fail")
	}
}
