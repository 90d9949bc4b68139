package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// Notify replaces Wait: in fsync mode it is called once, after the frame
// was synced and not before, with the outcome set; an op the engine
// answers at once (invalid, in a batch) is notified at once, by the
// submitter.
func TestNotifyAfterTheSync(t *testing.T) {
	fs := vfs.NewMem()
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityFsync, ManualFlush: true, TickInterval: -1})
	defer e.Close()

	var calls atomic.Int32
	got := make(chan *Request, 4)
	notify := func(r *Request) {
		calls.Add(1)
		got <- r
	}
	r := NewRequest()
	r.Op = inventory.Stock(rk("a", "w1"), 3, 1)
	r.Notify = notify
	if err := e.Submit(r); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
		t.Fatal("notified before the frame was synced")
	case <-time.After(20 * time.Millisecond):
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != r || n.Err != nil || n.Result.Code != inventory.CodeOK || n.Trace.Synced.IsZero() {
			t.Fatalf("notified with %+v, err %v, trace %+v", n.Result, n.Err, n.Trace)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not notified after Flush")
	}

	// A batch: an invalid op is answered at once, the valid one after the
	// next flush.
	bad, good := NewRequest(), NewRequest()
	bad.Op = inventory.Capture(gk("a"), -1)
	good.Op = inventory.Capture(gk("a"), 1)
	bad.Notify, good.Notify = notify, notify
	if n, err := e.SubmitBatch([]*Request{bad, good}); n != 2 || err != nil {
		t.Fatalf("SubmitBatch: %d, %v", n, err)
	}
	select {
	case n := <-got:
		if n != bad || n.Result.Code != inventory.CodeInvalid {
			t.Fatalf("first notified: %+v", n.Result)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the invalid op was not notified at once")
	}
	e.Flush()
	if n := <-got; n != good || n.Result.Code != inventory.CodeOK {
		t.Fatalf("second notified: %+v", n.Result)
	}
	if c := calls.Load(); c != 3 {
		t.Fatalf("%d calls for 3 requests", c)
	}
}

// In write mode a batch's replies are released at once: SubmitBatch calls
// each request's Notify before it returns.
func TestNotifyWriteModeBatch(t *testing.T) {
	e := mustOpen(t, Config{Dir: "/d", FS: vfs.NewMem(), Durability: DurabilityWrite, TickInterval: -1})
	defer e.Close()
	var notified []*Request
	rs := []*Request{NewRequest(), NewRequest(), NewRequest()}
	rs[0].Op = inventory.Stock(rk("a", "w1"), 3, 1)
	rs[1].Op = inventory.Capture(gk("a"), 0) // invalid
	rs[2].Op = inventory.Capture(gk("a"), 2)
	for _, r := range rs {
		r.Notify = func(r *Request) { notified = append(notified, r) }
	}
	if n, err := e.SubmitBatch(rs); n != 3 || err != nil {
		t.Fatalf("SubmitBatch: %d, %v", n, err)
	}
	if len(notified) != 3 {
		t.Fatalf("%d of 3 notified when SubmitBatch returned", len(notified))
	}
	for i, want := range []inventory.Code{inventory.CodeOK, inventory.CodeInvalid, inventory.CodeOK} {
		if r := rs[i]; r.Result.Code != want || r.settled {
			t.Fatalf("request %d: %v (settled %v), want %v", i, r.Result.Code, r.settled, want)
		}
	}
}
