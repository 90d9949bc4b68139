package relay

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/changes"
)

// The backoff schedule, draw by draw: doubling from the first pause up to
// the cap, half of each pause fixed and half drawn, over again after a
// reset; it never passes the cap, however many failures, however large.
func TestBackoffAudit13Schedule(t *testing.T) {
	b := backoff{first: 100 * time.Millisecond, max: time.Second}
	for i, tc := range []struct {
		draw float64
		want time.Duration
	}{
		{0, 50 * time.Millisecond},         // ceiling 100ms
		{0.5, 150 * time.Millisecond},      // 200ms
		{0.25, 250 * time.Millisecond},     // 400ms
		{0.75, 700 * time.Millisecond},     // 800ms
		{0, 500 * time.Millisecond},        // 1s, the cap
		{0.5, 750 * time.Millisecond},      // 1s
		{0.875, 937500 * time.Microsecond}, // 1s
	} {
		if got := b.next(tc.draw); got != tc.want {
			t.Errorf("failure %d, draw %v: pause %v, want %v", i, tc.draw, got, tc.want)
		}
	}
	b.reset()
	if got := b.next(0.5); got != 75*time.Millisecond {
		t.Errorf("after a reset: pause %v, want 75ms", got)
	}

	huge := backoff{first: time.Millisecond, max: math.MaxInt64}
	var last time.Duration
	for i := range 200 {
		d := huge.next(0.9999)
		if d < last || d <= 0 {
			t.Fatalf("failure %d: pause %v after %v", i, d, last)
		}
		last = d
	}
	if last < math.MaxInt64/2 {
		t.Errorf("after 200 failures the pause is %v, short of the cap", last)
	}
}

// A checkpoint round-trips through its file; a file of a seq alone reads
// as a checkpoint of no history; anything else is refused, naming the
// file.
func TestCheckpointAudit13File(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "cp")
	ev := changes.Event{Seq: 42, TimeMS: 1700000000000, Op: "capture", Rows: []changes.Row{{SKU: "s", Warehouse: "w", Condition: "c", Source: "o", Delta: -1, CountAfter: 3}}}
	cp := Checkpoint{Seq: 42, History: historyAt(&changes.Event{Seq: 1, Op: "stock", Rows: []changes.Row{}}), Event: fingerprint(&ev)}
	if err := cp.Save(name); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadCheckpoint(name); err != nil || got != cp {
		t.Fatalf("saved %+v, loaded %+v, %v", cp, got, err)
	}
	if seq, err := ReadCheckpoint(name); err != nil || seq != 42 {
		t.Fatalf("ReadCheckpoint: %d, %v", seq, err)
	}
	os.WriteFile(name, []byte("17\n"), 0o644)
	if got, err := LoadCheckpoint(name); err != nil || got != (Checkpoint{Seq: 17}) {
		t.Fatalf("a checkpoint of a seq alone: %+v, %v", got, err)
	}
	for _, text := range []string{
		"x\n",
		"17 history=1-0123456789abcdef\n",
		"17 history=1-0123456789abcdef event=0123\n",
		"17 history=0123456789abcdef event=0123456789abcdef\n",
		"17 event=0123456789abcdef history=1-0123456789abcdef\n",
		"17 history=1-0123456789abcdeg event=0123456789abcdef\n",
		"17 history=1-0123456789abcdef event=0123456789abcdef extra\n",
	} {
		os.WriteFile(name, []byte(text), 0o644)
		if got, err := LoadCheckpoint(name); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("checkpoint %q: %+v, %v; want an error naming the file", text, got, err)
		}
	}
}

// An event's fingerprint changes with any of its fields, and is the same
// for the same event read twice (as two nodes of a shard serve it).
func TestFingerprintAudit13(t *testing.T) {
	base := func() changes.Event {
		return changes.Event{Seq: 7, TimeMS: 1700000000000, Op: "hold", Hold: "h", Key: "k",
			Rows: []changes.Row{{SKU: "s", Warehouse: "w", Condition: "c", Source: "o", Delta: -2, CountAfter: 3}}}
	}
	ev := base()
	fp := fingerprint(&ev)
	if again := base(); fingerprint(&again) != fp {
		t.Fatal("the same event has two fingerprints")
	}
	for name, change := range map[string]func(*changes.Event){
		"seq":                 func(e *changes.Event) { e.Seq++ },
		"time":                func(e *changes.Event) { e.TimeMS++ },
		"op":                  func(e *changes.Event) { e.Op = "cancel" },
		"hold":                func(e *changes.Event) { e.Hold = "h2" },
		"key":                 func(e *changes.Event) { e.Key = "" },
		"sku":                 func(e *changes.Event) { e.SKU = "s" },
		"row sku":             func(e *changes.Event) { e.Rows[0].SKU = "t" },
		"warehouse":           func(e *changes.Event) { e.Rows[0].Warehouse = "w2" },
		"delta":               func(e *changes.Event) { e.Rows[0].Delta = -1 },
		"count":               func(e *changes.Event) { e.Rows[0].CountAfter = 4 },
		"no rows":             func(e *changes.Event) { e.Rows = []changes.Row{} },
		"fields run together": func(e *changes.Event) { e.Hold, e.Key = "hk", "" },
	} {
		ev := base()
		change(&ev)
		if fingerprint(&ev) == fp {
			t.Errorf("another %s, the same fingerprint", name)
		}
	}
}
