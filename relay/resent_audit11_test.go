package relay_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
	"allot/relay"
	"allot/server/servertest"
)

// A message the relay sends again after a failed round carries the header
// resent (a consumer may have it already, and it may arrive after a later
// event of its SKU); a first send does not. Stats.Resent counts the
// messages actually sent again: a round that fails before anything is
// written counts none.
func TestRelayAudit11ResentMarkedAndCounted(t *testing.T) {
	_, url := privateBroker(t)
	ch := openChannel(t, url)
	const exchange, queue = "audit11.resent", "audit11.resent.q"
	defer ch.QueueDelete(queue, false, false, false)
	s := servertest.Start(t, servertest.Options{})
	var fault faultNet
	var log syncBuffer
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: exchange, Queue: queue,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 100 * time.Millisecond, ConfirmTimeout: 500 * time.Millisecond,
		RetryPause: 50 * time.Millisecond, RetryPauseMax: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.SetDial(fault.dial)
	stop := runRelay(t, r)
	defer stop()

	stock(t, s.Engine, 0, 3)
	waitPosition(t, r, 3)

	// Seqs 4..8, six messages (seq 8 touches two SKUs), written and never
	// confirmed: rounds fail on their confirm timeout, until one has had
	// them all.
	fault.set(faultDrop)
	stock(t, s.Engine, 3, 4)
	order(t, s.Engine, "sku0", "sku1")
	waitLog(t, &log, "from=4 to=8", 1)
	// Then rounds that fail on their first write: nothing is sent again.
	// (A round under way when the fault changes ends first.)
	fault.set(faultFail)
	failed := strings.Count(log.String(), "not confirmed")
	waitLog(t, &log, "not confirmed", failed+1)
	resent := r.Stats.Resent.Load()
	waitLog(t, &log, "not confirmed", failed+3)
	if n := r.Stats.Resent.Load(); n != resent {
		t.Errorf("Resent went from %d to %d over rounds that failed before writing a message", resent, n)
	}
	fault.set(faultNone)
	waitPosition(t, r, 8)
	if n := r.Stats.Resent.Load(); n != resent+6 {
		t.Errorf("Resent went from %d to %d; the relay sent the six messages of seqs 4..8 again once", resent, n)
	}
	// A first send after all that: not marked.
	stock(t, s.Engine, 7, 1)
	waitPosition(t, r, 9)

	ds := drain(t, ch, queue)
	if n := checkConsumed(t, s.RESPAddr(), 1, 9, ds); n != 0 {
		t.Errorf("%d repeats without the header resent", n)
	}
	if len(ds) != 1+1+1+6+1 {
		t.Errorf("the queue holds %d messages, want 10 (each once: the dropped round reached no queue)", len(ds))
	}
	for _, d := range ds {
		seq := seqOf(d)
		resent := seq >= 4 && seq <= 8
		if got := d.Headers["resent"] == true; got != resent {
			t.Errorf("seq %d (%s): header resent %v, want %v (headers %v)", seq, d.RoutingKey, got, resent, d.Headers)
		}
	}
}

// order places an order for one unit of each SKU's row in warehouse w.
func order(t *testing.T, e *engine.Engine, skus ...string) {
	t.Helper()
	var ds []inventory.Demand
	for _, sku := range skus {
		ds = append(ds, inventory.Demand{Group: inventory.RowKey{SKU: sku, Warehouse: "w", Condition: "new", Source: "own"}.Group(), N: 1})
	}
	res, err := e.Do(inventory.Order(ds), nil)
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("order of %v: %+v, %v", skus, res, err)
	}
}

// waitLog waits until the log holds what at least n times.
func waitLog(t *testing.T, log *syncBuffer, what string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(log.String(), what) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the log holds %q %d times after 20 s, want %d:\n%s", what, strings.Count(log.String(), what), n, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
